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

__all__ = ["ModelSpec", "register_class", "register_model", "registered_class",
           "registered_names", "registered_spec", "retire_class_name"]


@dataclass(frozen=True)
class ModelSpec:
    name: str
    cls: type
    defaults: dict = field(default_factory=dict)
    description: str = ""


_MODELS: dict[str, ModelSpec] = {}
_CLASSES: dict[str, type] = {}
_RETIRED: dict[str, str] = {}


def register_class(cls: type) -> type:
    """Make ``cls`` loadable by its name from a ``config.json``."""
    _CLASSES[cls.__name__] = cls
    return cls


def retire_class_name(name: str, advice: str) -> None:
    """A class name that configs saved by zoo 0.2 and before hold and that zoo no longer loads:
    looking it up says so in one line, with ``advice``, how to rewrite such a config."""
    _RETIRED[name] = advice


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
    """The class registered under a ``config.json`` class name; a retired name is a one-line
    ``KeyError`` that says how to rewrite the config."""
    if class_name in _RETIRED and class_name not in _CLASSES:
        raise KeyError(f"{class_name} is a class name of zoo 0.2 and before, which zoo no longer reads: "
                       f"{_RETIRED[class_name]}")
    if class_name not in _CLASSES:
        raise KeyError(f"unknown model class {class_name!r}; known classes: {', '.join(sorted(_CLASSES))}")
    return _CLASSES[class_name]


set_class_lookup(registered_class)
