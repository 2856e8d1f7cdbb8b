"""``ProgressLog``: what a run will cost, and plain-text progress lines for runs whose output is a file.

Progress bars redraw one terminal line; under ``nohup`` they leave an empty log. This prints
what a bar would show (position, speed, time left, the progress-bar metrics) as log lines.
"""

from __future__ import annotations

import logging
import time

import lightning as L

log = logging.getLogger("zoo.progress")


class ProgressLog(L.Callback):
    """Says what a run will cost and how it goes, in lines a log file keeps.

    At the start: the plan (batches per epoch, epochs to go). After ``estimate_after_s`` seconds
    of training: the whole run's estimated time at the speed so far, so a long CPU job is
    known to be one within seconds, on a terminal too. With ``lines`` (when the output is not
    a terminal): a progress line every ``every_n_steps`` steps or ``every_s`` seconds,
    whichever comes first.
    """

    def __init__(self, every_n_steps: int = 50, every_s: float = 120.0, estimate_after_s: float = 10.0,
                 lines: bool = True):
        self.every_n_steps, self.every_s, self.estimate_after_s, self.lines = every_n_steps, every_s, estimate_after_s, lines
        self._started, self._first, self._last_line = time.perf_counter(), None, 0.0
        self._examples = 0
        self._estimated = False
        self._evaluation_started = time.perf_counter()

    def on_train_start(self, trainer, pl_module) -> None:
        total, epochs = trainer.num_training_batches, trainer.max_epochs
        per_epoch = "an unknown number of" if total == float("inf") else f"{int(total):,}"
        planned = "until stopped" if epochs in (None, -1) else f"{epochs - trainer.current_epoch} epoch(s) to go"
        log.info("training %s: %s batches per epoch, %s (epoch %d of %s)", type(pl_module).__name__, per_epoch,
                 planned, trainer.current_epoch, epochs)

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self._started, self._first = time.perf_counter(), None  # a resumed run starts mid-epoch without this
        self._examples = 0
        self._last_line = time.perf_counter()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        now = time.perf_counter()
        if self._first is None:
            self._first = (batch_idx, now)
            return
        self._examples += batch_size(batch)
        first_index, first_time = self._first
        seconds = max(now - first_time, 1e-9)
        rate = (batch_idx - first_index) / seconds
        total = trainer.num_training_batches
        if not self._estimated and seconds >= self.estimate_after_s and total != float("inf"):
            self._estimated = True
            self._estimate(trainer, batch_idx, rate)
        if not self.lines or ((batch_idx + 1) % self.every_n_steps and now - self._last_line < self.every_s):
            return
        self._last_line = now
        left = (total - batch_idx - 1) / rate if rate and total != float("inf") else float("nan")
        metrics = " ".join(f"{k}={float(v):.4g}" for k, v in trainer.progress_bar_metrics.items())
        log.info("epoch %d step %d/%s  %.2f it/s  %.1f examples/s  ~%.0f min left in epoch  %s",
                 trainer.current_epoch, batch_idx + 1, total, rate, self._examples / seconds, left / 60, metrics)

    def _estimate(self, trainer, batch_idx: int, rate: float) -> None:
        """The run's remaining training time at the speed so far (validation not included)."""
        total, epochs = int(trainer.num_training_batches), trainer.max_epochs
        if epochs in (None, -1) or not rate:
            return
        remaining = (total - batch_idx - 1) + (epochs - trainer.current_epoch - 1) * total
        hours = remaining / rate / 3600
        log.info("at %.2f batches/s so far, the %s training steps left take about %s (validation extra); "
                 "stop with Ctrl-C or SIGTERM, rerun the same command to resume", rate, f"{remaining:,}",
                 f"{hours:.1f} h" if hours >= 1 else f"{hours * 60:.0f} min")

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0) -> None:
        if not trainer.sanity_checking:
            self._evaluation_line(trainer, "validation", trainer.num_val_batches, batch_idx, dataloader_idx)

    def on_test_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0) -> None:
        self._evaluation_line(trainer, "test", trainer.num_test_batches, batch_idx, dataloader_idx)

    def _evaluation_line(self, trainer, stage: str, batches, batch_idx: int, dataloader_idx: int) -> None:
        """A line every ``every_n_steps`` batches or ``every_s`` seconds of a validation or test
        pass, and one when each of its sets is done: a cross-ranker's test pass over two
        splits can take longer than its training, and without these a log falls silent."""
        if not self.lines:
            return
        now = time.perf_counter()
        if batch_idx == 0:
            self._evaluation_started = self._last_line = now
        sets = list(batches) if isinstance(batches, (list, tuple)) else [batches]  # batches per set
        total = sets[dataloader_idx]
        done = batch_idx + 1 == total
        if not done and (batch_idx + 1) % self.every_n_steps and now - self._last_line < self.every_s:
            return
        self._last_line = now
        seconds = max(now - self._evaluation_started, 1e-9)
        where = f"{stage} set {dataloader_idx + 1}" if len(sets) > 1 else stage
        if done:
            log.info("%s: %d batches done in %.1f min", where, batch_idx + 1, seconds / 60)
            return
        left = (total - batch_idx - 1) * seconds / (batch_idx + 1) if total != float("inf") else float("nan")
        log.info("%s batch %d/%s  %.2f it/s  ~%.0f min left", where, batch_idx + 1, total,
                 (batch_idx + 1) / seconds, left / 60)

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
