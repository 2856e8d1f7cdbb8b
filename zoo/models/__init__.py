"""One module per model family; importing this package registers them all."""

from zoo.models.bi_ranker import BiRanker
from zoo.models.block_policy import BlockPolicy
from zoo.models.blocks_baselines import DemonstrationPolicy, RandomPolicy, StopPolicy
from zoo.models.cross_ranker import CrossRanker
from zoo.models.ensemble import PolicyEnsemble
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
    "BiRanker", "BlockPolicy", "CrossRanker", "DemonstrationPolicy", "GenerativeTransformer", "PolicyEnsemble",
    "RandomPolicy", "StopPolicy",
]
