"""One fit of a model in a run directory, resumed from its ``last.ckpt``: the part of a run both
domains share and the Blocks warm-up repeats in ``run_dir/warmup``.

:func:`fit_stage` builds the Trainer (the recipe's ``trainer`` section, the run's checkpoints,
its clock and legs, the logger), fits with resumption and finds the best checkpoint by the
monitored metric; :meth:`Fitted.load_best` puts that epoch's weights back into the model and
:func:`export` saves it with ``save_pretrained`` (only finite weights, only on rank 0).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import lightning as L
from omegaconf import DictConfig

from zoo.callbacks.finite_training import exit_unless_finite
from zoo.callbacks.run_legs import RunLegs
from zoo.callbacks.train_clock import TrainClock
from zoo.experiment import checkpointing, fit_resuming, load_run_checkpoint, make_logger, make_trainer

log = logging.getLogger("zoo.training")


@dataclass
class Fitted:
    """A finished fit: its Trainer, the legs of the run that trained it, and the best checkpoint
    by the monitored metric (None when no validation produced one)."""

    trainer: L.Trainer
    legs: RunLegs
    run_dir: Path
    best: str | None

    def load_best(self, model) -> int | None:
        """The best checkpoint's weights into ``model`` (on every rank); its epoch, if any."""
        if not self.best:
            return None
        state = load_run_checkpoint(self.best, self.run_dir)
        model.on_load_checkpoint(state)
        model.load_state_dict(state["state_dict"])
        return state.get("epoch")


def fit_stage(config: DictConfig, model, datamodule, run_dir: Path, *, monitor: str, mode: str,
              callbacks: Sequence = (), evaluation: Sequence = (), changes: Sequence[dict] = (),
              trainer_config: DictConfig | None = None, stage: str = "the run") -> Fitted:
    """Fit ``model`` on ``datamodule`` in ``run_dir``, resuming from its ``last.ckpt``.

    ``callbacks`` come first (a loop collecting experience, a caller's observers), then the
    clock and the legs (what ``results.json`` sums), ``evaluation`` (what logs ``monitor``), then
    the checkpoints (``best-epochNNN.ckpt`` by ``monitor`` in ``mode``, every epoch, ``last.ckpt``).
    ``trainer_config``: the Trainer's arguments when a stage sets its own length (default: the
    recipe's ``trainer`` section); ``stage``: what a resumed fit calls itself."""
    legs = RunLegs(config.data.batch_size, list(changes))
    checkpoints = checkpointing(run_dir, config.checkpoint.every_n_train_steps, monitor=monitor, mode=mode)
    every = [*callbacks, TrainClock(), legs, *evaluation, *checkpoints]  # the clock: metrics.jsonl's train_seconds
    trainer = make_trainer(config.trainer if trainer_config is None else trainer_config, run_dir, every,
                           make_logger(config, run_dir, run_dir.name), stage=stage)
    fit_resuming(trainer, model, datamodule, run_dir)
    best = next((c.best_model_path for c in checkpoints if getattr(c, "monitor", None) == monitor
                 and c.best_model_path), None)
    return Fitted(trainer, legs, run_dir, best)


def export(model, fitted: Fitted, record: dict, what: str = "model") -> Path:
    """``save_pretrained`` to ``run_dir/pretrained`` on rank 0, its marker keeping ``record``;
    weights that are not finite stop the run first, on every rank (each holds the same weights)."""
    destination = fitted.run_dir / "pretrained"
    exit_unless_finite(model, destination)
    if fitted.trainer.is_global_zero:
        model.save_pretrained(destination, record=record)
        log.info("exported %s %s to %s", "best" if fitted.best else "last", what, destination)
    return destination
