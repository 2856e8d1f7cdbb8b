"""``ProgressLog``: a plain-text progress line every N steps, for runs whose output is a file.

Progress bars redraw one terminal line; under ``nohup`` they leave an empty log. This prints
what a bar would show (position, speed, time left, the progress-bar metrics) as log lines.
"""

from __future__ import annotations

import logging
import time

import lightning as L

log = logging.getLogger("zoo.progress")


class ProgressLog(L.Callback):
    def __init__(self, every_n_steps: int = 50):
        self.every_n_steps = every_n_steps
        self._started, self._first = time.perf_counter(), None
        self._examples = 0

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self._started, self._first = time.perf_counter(), None  # a resumed run starts mid-epoch without this
        self._examples = 0

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if self._first is None:
            self._first = (batch_idx, time.perf_counter())
        else:
            self._examples += batch_size(batch)
        if (batch_idx + 1) % self.every_n_steps:
            return
        first_index, first_time = self._first
        done = batch_idx - first_index
        seconds = max(time.perf_counter() - first_time, 1e-9)
        rate = done / seconds
        total = trainer.num_training_batches
        left = (total - batch_idx - 1) / rate if rate and total != float("inf") else float("nan")
        metrics = " ".join(f"{k}={float(v):.4g}" for k, v in trainer.progress_bar_metrics.items())
        log.info("epoch %d step %d/%s  %.2f it/s  %.1f examples/s  ~%.0f min left in epoch  %s",
                 trainer.current_epoch, batch_idx + 1, total, rate, self._examples / seconds, left / 60, metrics)

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        metrics = " ".join(f"{k}={float(v):.4g}" for k, v in trainer.callback_metrics.items())
        log.info("epoch %d done in %.1f min  %s", trainer.current_epoch, (time.perf_counter() - self._started) / 60, metrics)


def batch_size(batch) -> int:
    """Examples in a batch: the length of its labels, actions or episodes (0 if unknown)."""
    if isinstance(batch, dict):
        for key in ("labels", "action", "episodes", "block"):
            if key in batch and hasattr(batch[key], "__len__"):
                return len(batch[key])
    return 0
