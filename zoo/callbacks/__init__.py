"""Lightning callbacks holding the zoo's cross-cutting training behaviour."""

from zoo.callbacks.contextual_bandit import ContextualBanditLoop

__all__ = ["ContextualBanditLoop"]
