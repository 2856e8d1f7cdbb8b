"""zoo: a PyTorch Lightning model zoo for grounded language (LIGHT and Blocks).

>>> import zoo
>>> zoo.list_models("blocks-*")
>>> policy = zoo.create_model("blocks-random", seed=1)
"""

from zoo.blocks.datamodule import BlocksDataModule
from zoo.grounded import Grounded
from zoo.hub import list_pretrained
from zoo.models import (
    BiRanker,
    BlockPolicy,
    CrossRanker,
    DemonstrationPolicy,
    GenerativeTransformer,
    RandomPolicy,
    StopPolicy,
)
from zoo.registry import create_model, list_models, load_pretrained

__version__ = "0.1.0"

__all__ = [
    "BiRanker",
    "BlockPolicy",
    "BlocksDataModule",
    "CrossRanker",
    "DemonstrationPolicy",
    "GenerativeTransformer",
    "Grounded",
    "RandomPolicy",
    "StopPolicy",
    "create_model",
    "list_models",
    "list_pretrained",
    "load_pretrained",
]
