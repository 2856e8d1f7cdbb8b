"""zoo: a PyTorch Lightning model zoo for grounded language (LIGHT and Blocks).

>>> import zoo
>>> zoo.list_models("blocks-*")
>>> policy = zoo.create_model("blocks-random", seed=1)
"""

from zoo.grounded import Grounded
from zoo.hub import list_pretrained
from zoo.registry import create_model, list_models, load_pretrained
from zoo.blocks.datamodule import BlocksDataModule
from zoo.models import BlockPolicy, DemonstrationPolicy, RandomPolicy, StopPolicy

__version__ = "0.1.0"

__all__ = [
    "BlockPolicy",
    "BlocksDataModule",
    "DemonstrationPolicy",
    "Grounded",
    "RandomPolicy",
    "StopPolicy",
    "create_model",
    "list_models",
    "list_pretrained",
    "load_pretrained",
]
