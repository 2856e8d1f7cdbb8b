"""Lightning callbacks holding the zoo's cross-cutting training behaviour."""

from zoo.callbacks.contextual_bandit import ContextualBanditLoop
from zoo.callbacks.dqn_loop import DQNLoop
from zoo.callbacks.expert_loop import ExpertLoop

__all__ = ["ContextualBanditLoop", "DQNLoop", "ExpertLoop"]
