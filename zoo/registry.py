"""Model names -> constructors with default configs (timm-style).

``create_model("blocks-random")`` builds a fresh model; ``load_pretrained("blocks-bandit")``
builds one with released weights. Each model family registers itself where it is defined.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Callable

from zoo.grounded import Grounded


@dataclass(frozen=True)
class ModelSpec:
    name: str
    cls: type[Grounded]
    defaults: dict = field(default_factory=dict)
    description: str = ""


_MODELS: dict[str, ModelSpec] = {}
_CLASSES: dict[str, type[Grounded]] = {}


def register_class(cls: type[Grounded]) -> type[Grounded]:
    """Make ``cls`` loadable by its name from a ``config.json``."""
    _CLASSES[cls.__name__] = cls
    return cls


def register_class_name(name: str, cls: type[Grounded]) -> None:
    """Make a former name of ``cls`` (one that saved configs still hold) load as ``cls``."""
    if name in _CLASSES and _CLASSES[name] is not cls:
        raise ValueError(f"class name {name!r} is already registered to {_CLASSES[name].__name__}")
    _CLASSES[name] = cls


def register_model(name: str, defaults: dict | None = None, description: str = "") -> Callable:
    """Decorator: register ``cls`` under ``name`` with default constructor arguments."""

    def decorate(cls: type[Grounded]) -> type[Grounded]:
        if name in _MODELS and _MODELS[name].cls is not cls:
            raise ValueError(f"model name {name!r} is already registered to {_MODELS[name].cls.__name__}")
        register_class(cls)
        _MODELS[name] = ModelSpec(name, cls, dict(defaults or {}), description or (cls.__doc__ or "").strip().split("\n")[0])
        return cls

    return decorate


def _ensure_models_imported() -> None:
    import zoo.models  # noqa: F401  (importing registers every model family)


def list_models(pattern: str | None = None) -> list[str]:
    """Registered model names, optionally filtered by a shell pattern such as ``"blocks-*"``."""
    _ensure_models_imported()
    names = sorted(_MODELS)
    return [n for n in names if fnmatch.fnmatch(n, pattern)] if pattern else names


def model_spec(name: str) -> ModelSpec:
    _ensure_models_imported()
    if name not in _MODELS:
        raise KeyError(f"unknown model {name!r}; known models: {', '.join(sorted(_MODELS))}")
    return _MODELS[name]


def create_model(name: str, pretrained: bool = False, **overrides) -> Grounded:
    """A new, untrained model: the registered defaults updated by ``overrides``; with
    ``pretrained=True`` the released weights of that name instead (timm's convention: one
    namespace for architectures and releases, e.g. ``create_model("light-bi-ranker", pretrained=True)``
    or ``create_model("blocks-bandit", pretrained=True)``)."""
    if pretrained:
        from zoo.hub import list_pretrained

        if name not in list_pretrained():
            raise KeyError(f"no released weights named {name!r}; released: {', '.join(list_pretrained())}")
        return load_pretrained(name, **overrides)
    spec = model_spec(name)
    return spec.cls(**{**spec.defaults, **overrides})


def model_class(class_name: str) -> type[Grounded]:
    """The model class named in a checkpoint's ``config.json``."""
    _ensure_models_imported()
    if class_name not in _CLASSES:
        raise KeyError(f"unknown model class {class_name!r}; known classes: {', '.join(sorted(_CLASSES))}")
    return _CLASSES[class_name]


def load_pretrained(name: str, **overrides) -> Grounded:
    """A released model by manifest name (see ``list_pretrained()``), downloaded and verified."""
    return Grounded.from_pretrained(name, **overrides)
