"""The factory: model names to models, one floor above the models and the registry (timm's
``_factory`` beside its ``_registry``; the AutoModel split of transformers).

``create_model`` / ``list_models`` / ``load_pretrained`` / ``model_class`` (a ``config.json``
names a class, this layer finds it) import every model family (:mod:`zoo.models`) and then
read the table :mod:`zoo.registry` holds, so the registry imports no model and a model file
may import the registry without a circle. Importing this module installs :func:`model_class`
as the lookup ``Grounded.from_pretrained`` uses (:func:`zoo.grounded.set_class_lookup`):
``zoo.grounded`` imports nothing above it.
"""

from __future__ import annotations

from zoo.grounded import Grounded, set_class_lookup
from zoo.registry import ModelSpec, registered_class, registered_names, registered_spec

__all__ = ["Grounded", "create_model", "list_models", "load_pretrained", "model_class", "model_spec"]


def _import_models() -> None:
    import zoo.models  # noqa: F401  (importing registers every model family)


def list_models(pattern: str | None = None) -> list[str]:
    """Registered model names, optionally filtered by a shell pattern such as ``"blocks-*"``."""
    _import_models()
    return registered_names(pattern)


def model_spec(name: str) -> ModelSpec:
    """The class and default arguments registered under ``name`` (``KeyError`` names the known ones)."""
    _import_models()
    return registered_spec(name)


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
    _import_models()
    return registered_class(class_name)


def load_pretrained(name: str, **overrides) -> Grounded:
    """A released model by manifest name (see ``list_pretrained()``), downloaded and verified."""
    return Grounded.from_pretrained(name, **overrides)


set_class_lookup(model_class)
