"""``ResumedStage``: a stage of a run that continues from its ``last.ckpt`` says so, in one line.

A rerun of an interrupted run picks up where its last checkpoint left it, and so does each
stage of it (the Blocks supervised warm-up before the bandit is one). Without a word, a log
reads as if the stage had trained from its start: "the supervised warm-up stopped at step 3
of 12; continuing it" tells the reader which steps this process trains.
"""

from __future__ import annotations

import logging
import math

import lightning as L

log = logging.getLogger("zoo.resume")


class ResumedStage(L.Callback):
    """Logs where ``stage`` (e.g. ``"the supervised warm-up"``) stopped when its fit starts from
    a checkpoint; says nothing for a fresh start, and nothing for a finished stage (Lightning
    then trains nothing and starts no training). Rank 0 speaks for all."""

    def __init__(self, stage: str = "the run"):
        self.stage = stage

    def on_train_start(self, trainer, pl_module) -> None:
        if trainer.global_step == 0 and trainer.current_epoch == 0 or not trainer.is_global_zero:
            return
        log.info("%s stopped at step %s; continuing it", self.stage, progress(trainer, pl_module))


def progress(trainer, pl_module) -> str:
    """``3 of 12`` where the stage's total is known (one optimizer step per batch, or
    ``trainer.max_steps``), else ``3 (epoch 2 of 20)``: an objective that steps several times per
    batch (the bandit) has no total until it has run."""
    step = trainer.global_step
    total = None
    if pl_module.automatic_optimization:
        total = trainer.estimated_stepping_batches
    elif trainer.max_steps and trainer.max_steps > 0:
        total = trainer.max_steps
    if total is not None and math.isfinite(total):
        return f"{step:,} of {int(total):,}"
    epochs = trainer.max_epochs
    return f"{step:,} (epoch {trainer.current_epoch + 1} of {epochs if epochs not in (None, -1) else 'unlimited'})"
