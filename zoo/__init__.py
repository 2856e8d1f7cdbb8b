"""zoo: a PyTorch Lightning model zoo for grounded language (LIGHT and Blocks).

>>> import zoo
>>> zoo.list_models("blocks-*")
>>> policy = zoo.create_model("blocks-random", seed=1)
>>> from zoo import BiRanker

Names are imported on first use (PEP 562): ``import zoo`` and ``zoo --help`` do not load
Lightning, torch or transformers until a model or data module is asked for.
"""

from __future__ import annotations

import importlib

__version__ = "0.3.0"
"""The release; pyproject.toml reads it from here (one source for the wheel, ``zoo --version``)."""

_EXPORTS = {
    "BiRanker": "zoo.models",
    "BlocksBandit": "zoo.models",
    "BlocksDataModule": "zoo.blocks.datamodule",
    "BlocksDemonstrations": "zoo.models",
    "BlocksDQN": "zoo.models",
    "BlocksEnsemble": "zoo.models",
    "BlocksNetworkConfig": "zoo.models.blocks",
    "BlocksPlanner": "zoo.models",
    "BlocksPolicy": "zoo.models",
    "BlocksRandom": "zoo.models",
    "BlocksReinforce": "zoo.models",
    "BlocksStop": "zoo.models",
    "BlocksSupervised": "zoo.models",
    "CrossRanker": "zoo.models",
    "GenerativeTransformer": "zoo.models",
    "Grounded": "zoo.factory",  # the factory re-exports it, with its class lookup installed
    "LightDataModule": "zoo.light.datamodule",
    "create_model": "zoo.factory",
    "list_models": "zoo.factory",
    "list_pretrained": "zoo.hub",
    "load_pretrained": "zoo.factory",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value  # later lookups skip this function
        return value
    raise AttributeError(f"module 'zoo' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
