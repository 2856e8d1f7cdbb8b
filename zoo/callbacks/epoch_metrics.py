"""``EpochMetricsFile``: every validation's metrics as one JSON line in the run directory.

W&B offline files need wandb to read, and a log's progress lines are for people. Learning
curves, model cards and the per-epoch tables of long runs are made from ``metrics.jsonl``:
a plain file, small enough to commit beside the results it explains.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import lightning as L

from zoo.callbacks.train_clock import TrainClock

FILE_NAME = "metrics.jsonl"


class EpochMetricsFile(L.Callback):
    """Appends ``{"epoch", "step", "train_seconds", <metric>: value, ...}`` after each validation.

    A resumed run may validate an epoch again (a run killed between its last batch and its
    validation does): readers keep the last line of each epoch (:func:`read_epoch_metrics`).
    ``train_seconds`` comes from the run's ``TrainClock`` when it has one (summed over resumes).
    """

    def __init__(self, run_dir: str | Path):
        self.path = Path(run_dir) / FILE_NAME

    def on_validation_end(self, trainer: L.Trainer, pl_module) -> None:
        if trainer.sanity_checking or not trainer.is_global_zero:
            return
        row: dict[str, float | int | None] = {"epoch": trainer.current_epoch, "step": trainer.global_step}
        clock = next((c for c in trainer.callbacks if isinstance(c, TrainClock)), None)
        row["train_seconds"] = round(clock.seconds, 1) if clock is not None else None
        for name, value in sorted(trainer.callback_metrics.items()):
            try:
                number = float(value)
            except (TypeError, ValueError):  # a tensor of several values: not a curve point
                continue
            row[name] = number if math.isfinite(number) else None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as handle:
            handle.write(json.dumps(row) + "\n")


def read_epoch_metrics(path: str | Path) -> list[dict]:
    """The rows of a ``metrics.jsonl`` (or of the run directory holding one), one per epoch,
    the last written for each, in epoch order."""
    path = Path(path)
    if path.is_dir():
        path = path / FILE_NAME
    by_epoch: dict[int, dict] = {}
    for line in path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            by_epoch[int(row["epoch"])] = row
    return [by_epoch[epoch] for epoch in sorted(by_epoch)]
