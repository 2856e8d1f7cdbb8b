"""``Grounded``: the one interface every zoo model implements.

A grounded agent reads an observation (a LIGHT context, a Blocks board and instruction) and
ranks a set of candidate decisions (utterances, actions, emotes, the 81 block moves).
Everything else (training loops, metrics, the hub, the CLI) is written against these few
methods, so a new model only has to say how it scores.
"""

from __future__ import annotations

import inspect
import json
import os
from pathlib import Path
from typing import Any, Callable

import lightning as L
import torch

from zoo.remote_code import refuse_remote_code, refuse_remote_code_in_folder
from zoo.safe_json import read_json
from zoo.weights import DEFAULT_MAX_SHARD_SIZE, check_against_weights, load_weights, save_weights

__all__ = ["CONFIG_NAME", "Grounded", "check_against_weights", "named_arguments", "read_checkpoint_config",
           "refuse_remote_code", "set_class_lookup"]

CONFIG_NAME = "config.json"

_class_lookup: Callable[[str], type] | None = None
"""``config.json`` class name -> class. This module imports nothing above it, so the floors above
install the lookup: the registry (:mod:`zoo.registry`, imported by every model file) installs
its table of the classes registered so far, and the factory (:mod:`zoo.factory`) replaces it
with one that imports every model family first."""


def set_class_lookup(lookup: Callable[[str], type]) -> None:
    """Install the function that resolves a ``config.json`` ``model_class`` (``KeyError`` if unknown)."""
    global _class_lookup
    _class_lookup = lookup


def _lookup_class(name: str) -> type:
    if _class_lookup is None:  # no model file imported yet, so no class could be named
        raise KeyError(f"model class {name!r} is not known: no model family is imported (load through the "
                       "factory, zoo.Grounded.from_pretrained or zoo.load_pretrained, or import zoo.models first)")
    return _class_lookup(name)


class Grounded(L.LightningModule):
    """Base LightningModule of every model in the zoo.

    Subclasses call ``self.save_hyperparameters()`` in ``__init__`` with JSON-serialisable
    arguments only: those hyper-parameters are the whole config written by
    :meth:`save_pretrained`, and ``cls(**config)`` must rebuild the architecture.

    ``domain`` says which benchmark a model plays (``"light"`` or ``"blocks"``), so a command
    can refuse a model of the other one in a line instead of failing deep inside.
    """

    domain: str = ""

    def score(self, observations: Any, candidates: Any = None) -> torch.Tensor:
        """Scores ``[B, C]`` of each observation's candidates; higher is better."""
        raise NotImplementedError(f"{type(self).__name__} does not implement score()")

    @torch.no_grad()
    def predict(self, observations: Any, candidates: Any = None) -> torch.Tensor:
        """Index of the best candidate for each observation, usable without a Trainer."""
        return self.score(observations, candidates).argmax(dim=-1)

    # ------------------------------------------------------------------ persistence
    @classmethod
    def config_keys(cls) -> frozenset[str] | None:
        """The keys a config may give ``cls(**config)`` (a ``config.json``, a recipe's
        ``model.options``): the constructor's named arguments, or None when it takes any keyword
        and checks them itself. A class whose ``**options`` are a known set names them here."""
        parameters = inspect.signature(cls.__init__).parameters.values()
        return None if any(p.kind is p.VAR_KEYWORD for p in parameters) else named_arguments(cls)

    def config(self) -> dict:
        """The constructor arguments that rebuild this model (its saved hyper-parameters)."""
        return {key: value for key, value in dict(self.hparams).items()}

    def save_pretrained(self, directory: str | os.PathLike, max_shard_size: int | str = DEFAULT_MAX_SHARD_SIZE,
                        weights_dtype: torch.dtype | None = None, record: dict | None = None) -> Path:
        """Write ``config.json`` and the weights (safetensors in the Hugging Face layout, shards
        of at most ``max_shard_size``, bytes or a size such as ``"5GB"``, as transformers takes it:
        :mod:`zoo.weights`; floating tensors as ``weights_dtype`` when given, e.g. a float16
        release) to ``directory``.

        The files are written into a temporary sibling and moved into place, so an
        interrupted save never leaves a half-written checkpoint behind. ``record`` is kept in
        the directory's marker (a training run's configuration hash: which run it came from).
        """
        from zoo.safe_writes import replace_directory

        directory = Path(directory)
        with replace_directory(directory, kind="model", record=record) as staging:
            payload = {"model_class": type(self).__name__, "config": self.config()}
            (staging / CONFIG_NAME).write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
            save_weights(self, staging, max_shard_size, weights_dtype)
            self.save_extra_files(staging)
        return directory

    def save_extra_files(self, directory: Path) -> None:
        """Hook for models that need more than config and weights (e.g. tokenizer files)."""

    @classmethod
    def from_pretrained(cls, name_or_path: str | os.PathLike, map_location: str = "cpu", **overrides) -> "Grounded":
        """Load a model from a ``save_pretrained`` directory or a released name.

        A path is a ``Path``, or text that starts with ``.``, ``/`` or ``~`` or holds a
        separator (``./blocks-bandit``, ``runs/x/pretrained``); anything else is a released
        name, resolved through the manifest (``zoo.list_pretrained()``), downloaded once and
        verified by sha256, even if a folder of that name sits in the working directory.
        Weights are safetensors: nothing is unpickled. What a file may decide is limited:
        network access and remote code come only from the caller (``allow_download`` is
        off unless passed here, and a folder with any settings file asking for custom code is
        refused: :mod:`zoo.remote_code`), and the architecture the config describes is checked
        against the weights' shapes (read from the safetensors header) before anything is
        allocated (:func:`zoo.weights.check_against_weights`).
        """
        from zoo.hub import fetch_pretrained, looks_like_path

        if looks_like_path(name_or_path):
            directory = Path(name_or_path).expanduser()
            if not directory.is_dir():
                raise FileNotFoundError(f"{str(name_or_path)!r} is not a directory (a released name has no '/' or leading '.')")
        else:
            directory = fetch_pretrained(str(name_or_path))
        refuse_remote_code_in_folder(directory)  # before any file of it reaches transformers
        target, config = read_checkpoint_config(directory, cls)
        if "allow_download" in config:
            config["allow_download"] = False  # a file never turns the network on; the caller may
        config.update(overrides)
        check_against_weights(target, config, directory)
        try:
            model = target(**config)
            model.load_extra_files(directory)
            load_weights(model, directory, device=map_location)
        except (RuntimeError, OSError, ValueError, TypeError, KeyError) as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise ValueError(f"cannot load {directory}: {first}") from error
        return model.eval()

    def load_extra_files(self, directory: Path) -> None:
        """Counterpart of :meth:`save_extra_files`."""


def named_arguments(cls: type) -> frozenset[str]:
    """The arguments ``cls``'s constructor names (not ``self``, ``*args`` or ``**options``)."""
    parameters = inspect.signature(cls.__init__).parameters.values()
    return frozenset(p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)) - {"self"}


def read_checkpoint_config(directory: Path, expected: type) -> tuple[type, dict]:
    """The model class and constructor arguments in ``directory/config.json``, validated."""
    config_path = directory / CONFIG_NAME
    if not config_path.is_file():
        raise FileNotFoundError(f"{directory} has no {CONFIG_NAME}; is it a save_pretrained directory?")
    payload = read_json(config_path)
    if not isinstance(payload, dict) or not isinstance(payload.get("model_class"), str) \
            or not isinstance(payload.get("config"), dict):
        raise ValueError(f"{config_path} must be an object with 'model_class' (a string) and 'config' (an object)")
    extra = sorted(set(payload) - {"model_class", "config"})
    if extra:
        raise ValueError(f"{config_path} has unknown field(s) {', '.join(map(repr, extra))}")
    try:
        target = _lookup_class(payload["model_class"])
    except KeyError as error:
        raise ValueError(f"{config_path}: {error.args[0]}") from None
    if not issubclass(target, expected):
        raise TypeError(f"{directory} holds a {target.__name__}, not a {expected.__name__}")
    config = dict(payload["config"])
    refuse_remote_code(config, config_path)
    accepted = target.config_keys()
    if accepted is not None:
        unknown = sorted(set(config) - accepted)
        if unknown:
            raise ValueError(f"{config_path}: {target.__name__} takes no argument(s) {', '.join(map(repr, unknown))}")
    return target, config
