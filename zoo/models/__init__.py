"""One module per model family; importing this package registers them all."""

from zoo.models.block_policy import BlockPolicy
from zoo.models.blocks_baselines import DemonstrationPolicy, RandomPolicy, StopPolicy
from zoo.models.light_baselines import CandidatesOnlyRanker, FastTextRanker, IRRanker, RandomRanker  # noqa: F401
from zoo.models.memnet import TransformerMemNet  # noqa: F401
from zoo.models.starspace import StarSpaceRanker  # noqa: F401

__all__ = ["BlockPolicy", "DemonstrationPolicy", "RandomPolicy", "StopPolicy"]
