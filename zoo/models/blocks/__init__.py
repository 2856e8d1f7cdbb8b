"""Blocks policies: the CNN-LSTM network (``network``, its settings ``BlocksNetworkConfig``), the
base every objective extends (``policy``), one LightningModule per objective, the baselines and ensembles.

A new objective is one module here with a ``@register_objective("name")`` class, plus its
import below: importing this package registers every objective and baseline.
"""

from zoo.models.blocks.agent import BlocksAgent
from zoo.models.blocks.baselines import BlocksDemonstrations, BlocksRandom, BlocksStop
from zoo.models.blocks.ensemble import BlocksEnsemble
from zoo.models.blocks.network_config import BlocksNetworkConfig
from zoo.models.blocks.policy import BlocksPolicy, list_objectives, objective_class, register_objective
from zoo.models.blocks.supervised import BlocksSupervised
from zoo.models.blocks.bandit import BlocksBandit
from zoo.models.blocks.reinforce import BlocksReinforce
from zoo.models.blocks.dqn import BlocksDQN
from zoo.models.blocks.planner import BlocksPlanner
from zoo.models.blocks.dagger import BlocksDagger
from zoo.models.blocks.spo import BlocksSpo
from zoo.models.blocks.goal import BlocksGoalPredictor, GoalPredictorEnsemble
from zoo.models.blocks.goal_policy import BlocksGoal

__all__ = [
    "BlocksAgent", "BlocksBandit", "BlocksDagger", "BlocksDQN", "BlocksDemonstrations", "BlocksEnsemble", "BlocksGoal", "BlocksGoalPredictor",
    "GoalPredictorEnsemble",
    "BlocksNetworkConfig", "BlocksPlanner", "BlocksPolicy", "BlocksRandom", "BlocksReinforce", "BlocksSpo", "BlocksStop",
    "BlocksSupervised", "list_objectives", "objective_class", "register_objective",
]
