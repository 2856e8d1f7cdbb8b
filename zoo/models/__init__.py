"""One module per model family; importing this package registers them all."""

from zoo.models.bi_ranker import BiRanker
from zoo.models.blocks import (  # noqa: F401
    BlocksBandit,
    BlocksDemonstrations,
    BlocksDQN,
    BlocksEnsemble,
    BlocksPlanner,
    BlocksPolicy,
    BlocksRandom,
    BlocksReinforce,
    BlocksStop,
    BlocksSupervised,
)
from zoo.models.cross_ranker import CrossRanker
from zoo.models.generative import GenerativeTransformer
from zoo.models.light_baselines import (  # noqa: F401
    CandidatesOnlyRanker,
    FastTextRanker,
    IRRanker,
    RandomRanker,
)
from zoo.models.memnet import TransformerMemNet  # noqa: F401
from zoo.models.starspace import StarSpaceRanker  # noqa: F401

__all__ = [
    "BiRanker", "BlocksBandit", "BlocksDQN", "BlocksDemonstrations", "BlocksEnsemble", "BlocksPlanner", "BlocksPolicy",
    "BlocksRandom", "BlocksReinforce", "BlocksStop", "BlocksSupervised", "CrossRanker", "GenerativeTransformer",
]
