"""``Grounded``: the one interface every zoo model implements.

A grounded agent reads an observation (a LIGHT context, a Blocks board and instruction) and
ranks a set of candidate decisions (utterances, actions, emotes, the 81 block moves).
Everything else (training loops, metrics, the hub, the CLI) is written against these few
methods, so a new model only has to say how it scores.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import lightning as L
import torch
from safetensors.torch import load_model, save_model

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"


class Grounded(L.LightningModule):
    """Base LightningModule of every model in the zoo.

    Subclasses call ``self.save_hyperparameters()`` in ``__init__`` with JSON-serialisable
    arguments only: those hyper-parameters are the whole config written by
    :meth:`save_pretrained`, and ``cls(**config)`` must rebuild the architecture.
    """

    def score(self, observations: Any, candidates: Any = None) -> torch.Tensor:
        """Scores ``[B, C]`` of each observation's candidates; higher is better."""
        raise NotImplementedError(f"{type(self).__name__} does not implement score()")

    @torch.no_grad()
    def predict(self, observations: Any, candidates: Any = None) -> torch.Tensor:
        """Index of the best candidate for each observation, usable without a Trainer."""
        return self.score(observations, candidates).argmax(dim=-1)

    # ------------------------------------------------------------------ persistence
    def config(self) -> dict:
        """The constructor arguments that rebuild this model (its saved hyper-parameters)."""
        return {key: value for key, value in dict(self.hparams).items()}

    def save_pretrained(self, directory: str | os.PathLike) -> Path:
        """Write ``config.json`` and ``model.safetensors`` to ``directory``.

        The files are written into a temporary sibling and moved into place, so an
        interrupted save never leaves a half-written checkpoint behind.
        """
        from zoo.files import replace_directory

        directory = Path(directory)
        with replace_directory(directory) as staging:
            payload = {"model_class": type(self).__name__, "config": self.config()}
            (staging / CONFIG_NAME).write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
            save_model(self, str(staging / WEIGHTS_NAME))
            self.save_extra_files(staging)
        return directory

    def save_extra_files(self, directory: Path) -> None:
        """Hook for models that need more than config and weights (e.g. tokenizer files)."""

    @classmethod
    def from_pretrained(cls, name_or_path: str | os.PathLike, map_location: str = "cpu", **overrides) -> "Grounded":
        """Load a model from a ``save_pretrained`` directory or a released name.

        Names resolve through the checkpoint manifest (``zoo.list_pretrained()``) and are
        downloaded once, verified by sha256. Weights are safetensors: nothing is unpickled.
        """
        from zoo.registry import model_class

        directory = Path(name_or_path)
        if not directory.is_dir():
            from zoo.hub import fetch_pretrained

            directory = fetch_pretrained(str(name_or_path))
        config_path = directory / CONFIG_NAME
        if not config_path.is_file():
            raise FileNotFoundError(f"{directory} has no {CONFIG_NAME}; is it a save_pretrained directory?")
        payload = json.loads(config_path.read_text())
        target = model_class(payload["model_class"])
        if not issubclass(target, cls):
            raise TypeError(f"{directory} holds a {target.__name__}, not a {cls.__name__}")
        model = target(**{**payload["config"], **overrides})
        model.load_extra_files(directory)
        load_model(model, str(directory / WEIGHTS_NAME), strict=True, device=map_location)
        return model.eval()

    def load_extra_files(self, directory: Path) -> None:
        """Counterpart of :meth:`save_extra_files`."""
