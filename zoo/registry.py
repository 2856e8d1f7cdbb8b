"""Model names -> classes with default configs (timm's ``_registry``): a table, nothing more.

Each model family registers itself where it is defined (``@register_model("blocks-random")``);
this module imports no model and nothing above the core, so every model file may import it.
Building a model from a name, listing names and loading releases or ``config.json`` class
names is the factory's job, one floor up: :mod:`zoo.factory` (``create_model``,
``list_models``, ``load_pretrained``, ``model_class``), which imports every model family
first, so a name is known before it is looked up.

Importing it also installs :func:`registered_class` as the class lookup of
``Grounded.from_pretrained`` (``zoo.grounded`` sits below and imports nothing above it).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Callable

from zoo.grounded import set_class_lookup

__all__ = ["ModelSpec", "register_class", "register_class_name", "register_model", "registered_class",
           "registered_names", "registered_spec"]


@dataclass(frozen=True)
class ModelSpec:
    name: str
    cls: type
    defaults: dict = field(default_factory=dict)
    description: str = ""


_MODELS: dict[str, ModelSpec] = {}
_CLASSES: dict[str, type] = {}


def register_class(cls: type) -> type:
    """Make ``cls`` loadable by its name from a ``config.json``."""
    _CLASSES[cls.__name__] = cls
    return cls


def register_class_name(name: str, cls: type) -> None:
    """Make a former name of ``cls`` (one that saved configs still hold) load as ``cls``."""
    if name in _CLASSES and _CLASSES[name] is not cls:
        raise ValueError(f"class name {name!r} is already registered to {_CLASSES[name].__name__}")
    _CLASSES[name] = cls


def register_model(name: str, defaults: dict | None = None, description: str = "") -> Callable:
    """Decorator: register ``cls`` under ``name`` with default constructor arguments."""

    def decorate(cls: type) -> type:
        if name in _MODELS and _MODELS[name].cls is not cls:
            raise ValueError(f"model name {name!r} is already registered to {_MODELS[name].cls.__name__}")
        register_class(cls)
        _MODELS[name] = ModelSpec(name, cls, dict(defaults or {}), description or (cls.__doc__ or "").strip().split("\n")[0])
        return cls

    return decorate


def registered_names(pattern: str | None = None) -> list[str]:
    """The model names registered so far, optionally filtered by a shell pattern."""
    names = sorted(_MODELS)
    return [n for n in names if fnmatch.fnmatch(n, pattern)] if pattern else names


def registered_spec(name: str) -> ModelSpec:
    """The spec registered under ``name``; ``KeyError`` (one line, the known names) if none is."""
    if name not in _MODELS:
        raise KeyError(f"unknown model {name!r}; known models: {', '.join(sorted(_MODELS))}")
    return _MODELS[name]


def registered_class(class_name: str) -> type:
    """The class registered under a ``config.json`` class name (its own or a former one)."""
    if class_name not in _CLASSES:
        raise KeyError(f"unknown model class {class_name!r}; known classes: {', '.join(sorted(_CLASSES))}")
    return _CLASSES[class_name]


set_class_lookup(registered_class)
