"""``ProgressLog``: what a run will cost, and plain-text progress lines for runs whose output is a file.

Progress bars redraw one terminal line; under ``nohup`` they leave an empty log. This prints
what a bar would show (position, speed, time left, the progress-bar metrics) as log lines.
"""

from __future__ import annotations

import logging
import math
import time

import lightning as L

from zoo.callbacks.fit_estimate import Estimate, FitClock, duration, estimate

log = logging.getLogger("zoo.progress")


class ProgressLog(L.Callback):
    """Says what a run will cost and how it goes, in lines a log file keeps.

    At the start: the plan (batches per epoch, epochs to go). ``estimate_after_s`` seconds after
    training starts (at the first batch end from then on): when training will end, counting
    what the fit really spends: the training batches left at the speed measured so far (data
    loading and the epochs' checkpoints included, validation left out) and every validation
    pass left, each as long as the first one took, or, until one has run, guessed from the
    batches it holds (:func:`validation_guess`). Once the first validation has been timed, the
    estimate is said again if that moves it by more than ``revise_by`` (20%). So a long CPU job
    is known to be one within seconds, on a terminal too. The estimate honours
    ``trainer.max_steps``, ``max_epochs`` and ``max_time`` (and the data limits, through the
    batches per epoch), and the validation schedule (``val_check_interval``,
    ``check_val_every_n_epoch``). At the end: how long training took. With ``lines`` (when the
    output is not a terminal): a progress line every ``every_n_steps`` steps or ``every_s``
    seconds, whichever comes first. Under DDP only rank 0 speaks: the other ranks' lines would
    repeat its own.
    """

    def __init__(self, every_n_steps: int = 50, every_s: float = 120.0, estimate_after_s: float = 10.0,
                 lines: bool = True, revise_by: float = 0.2):
        self.every_n_steps, self.every_s, self.estimate_after_s, self.lines = every_n_steps, every_s, estimate_after_s, lines
        self.revise_by = revise_by
        self._started, self._first, self._last_line = time.perf_counter(), None, 0.0
        self._examples = 0
        self._evaluation_started = time.perf_counter()
        self.clock = FitClock()
        self._estimated: Estimate | None = None  # as last said
        self._batch_idx, self._start_step = 0, 0

    def on_train_start(self, trainer, pl_module) -> None:
        if not speaks(trainer):
            return
        total, epochs = trainer.num_training_batches, trainer.max_epochs
        per_epoch = "an unknown number of" if total == float("inf") else f"{int(total):,}"
        planned = "until stopped" if epochs in (None, -1) else f"{epochs - trainer.current_epoch} epoch(s) to go"
        max_steps = max_steps_of(trainer)
        if max_steps:
            planned += f", or until step {max_steps:,} (trainer.max_steps; {max(max_steps - trainer.global_step, 0):,} to go)"
        from zoo.threads import current_choice

        log.info("training %s: %s batches per epoch, %s (epoch %d of %s), on %s", type(pl_module).__name__,
                 per_epoch, planned, trainer.current_epoch, epochs, current_choice())
        self.clock.start(time.perf_counter())
        self._start_step = getattr(trainer, "global_step", 0)

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self._started, self._first = time.perf_counter(), None  # a resumed run starts mid-epoch without this
        self._examples = 0
        self._last_line = time.perf_counter()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if not speaks(trainer):
            return
        now, self._batch_idx = time.perf_counter(), batch_idx
        self.clock.batch_end(now)
        first_of_epoch = self._first is None
        if first_of_epoch:
            self._first = (batch_idx, now)
        total = trainer.num_training_batches
        if self._estimated is None and self.clock.since_start(now) >= self.estimate_after_s and total != float("inf"):
            first = self._estimate(trainer, batch_idx, now)
            if first is not None:
                self._say(first)
        if first_of_epoch:
            return
        self._examples += batch_size(batch)
        first_index, first_time = self._first
        seconds = max(now - first_time, 1e-9)
        rate = (batch_idx - first_index) / seconds
        if not self.lines or ((batch_idx + 1) % self.every_n_steps and now - self._last_line < self.every_s):
            return
        self._last_line = now
        left_batches, where = (total - batch_idx - 1 if total != float("inf") else float("nan")), "in epoch"
        to_max_steps = self._batches_to_max_steps(trainer)
        if to_max_steps is not None and not to_max_steps >= left_batches:
            left_batches, where = to_max_steps, "to max_steps"
        left = left_batches / rate if rate else float("nan")
        metrics = " ".join(f"{k}={float(v):.4g}" for k, v in trainer.progress_bar_metrics.items())
        log.info("epoch %d step %d/%s  %.2f it/s  %.1f examples/s  ~%.0f min left %s  %s",
                 trainer.current_epoch, batch_idx + 1, total, rate, self._examples / seconds, left / 60, where, metrics)

    def _batches_to_max_steps(self, trainer) -> int | None:
        """Batches until ``trainer.max_steps`` at the optimizer steps per batch so far (a bandit
        batch makes several), or None without a step limit."""
        max_steps = max_steps_of(trainer)
        if not max_steps:
            return None
        steps_per_batch = (trainer.global_step - self._start_step) / max(self.clock.batch_ends, 1) or 1.0
        return max(math.ceil((max_steps - trainer.global_step) / steps_per_batch), 0)

    def _batches_left(self, trainer, batch_idx: int) -> tuple[int, bool] | None:
        """(training batches left after ``batch_idx``, whether ``trainer.max_steps`` ends the run
        before its last epoch does), or None when neither limit is set."""
        total, epochs = int(trainer.num_training_batches), trainer.max_epochs
        to_epochs = None
        if epochs not in (None, -1):
            to_epochs = (total - batch_idx - 1) + (epochs - trainer.current_epoch - 1) * total
        to_max_steps = self._batches_to_max_steps(trainer)
        if to_max_steps is not None and (to_epochs is None or to_max_steps < to_epochs):
            return to_max_steps, True
        return (to_epochs, False) if to_epochs is not None else None

    def _estimate(self, trainer, batch_idx: int, now: float) -> Estimate | None:
        """When training ends, seen after ``batch_idx`` (see :mod:`zoo.callbacks.fit_estimate`)."""
        left = self._batches_left(trainer, batch_idx)
        if left is None:
            return None
        done = trainer.current_epoch * int(trainer.num_training_batches) + batch_idx + 1
        return estimate(trainer, self.clock, done, *left, now, time_remaining(trainer))

    def _say(self, said: Estimate, why: str = "") -> None:
        self._estimated = said
        log.info("%s%s; stop with Ctrl-C or SIGTERM, rerun the same command to resume", why, said)

    def on_validation_start(self, trainer, pl_module) -> None:
        if not trainer.sanity_checking:
            self.clock.validation_start(time.perf_counter())

    def on_validation_end(self, trainer, pl_module) -> None:
        """The first validation timed: the estimate said again if that moves it by more than ``revise_by``."""
        if trainer.sanity_checking or not speaks(trainer):
            return
        now = time.perf_counter()
        if not self.clock.validation_end(now) or self._estimated is None or len(self.clock.validations) > 1:
            return
        revised = self._estimate(trainer, self._batch_idx, now)
        before = self._estimated.total
        if revised is not None and revised.batches and abs(revised.total - before) > self.revise_by * before:
            self._say(revised, f"revised, the first validation took {duration(self.clock.validations[0])}: ")

    def on_train_end(self, trainer, pl_module) -> None:
        if not speaks(trainer) or self.clock.started is None:
            return
        said = f" (estimated {duration(self._estimated.total)})" if self._estimated is not None else ""
        log.info("training took %s%s", duration(self.clock.since_start(time.perf_counter())), said)

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0) -> None:
        if not trainer.sanity_checking and speaks(trainer):
            self._evaluation_line(trainer, "validation", trainer.num_val_batches, batch_idx, dataloader_idx)

    def on_test_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0) -> None:
        if speaks(trainer):
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
        if not speaks(trainer):
            return
        metrics = " ".join(f"{k}={float(v):.4g}" for k, v in trainer.callback_metrics.items())
        log.info("epoch %d done in %.1f min  %s", trainer.current_epoch, (time.perf_counter() - self._started) / 60, metrics)


def speaks(trainer) -> bool:
    """Rank 0 prints the progress; a trainer without ranks (one process) does too."""
    return getattr(trainer, "is_global_zero", True)


def max_steps_of(trainer) -> int | None:
    """``trainer.max_steps`` when it is set (Lightning's -1 means no limit)."""
    max_steps = getattr(trainer, "max_steps", -1)
    return max_steps if max_steps is not None and max_steps > 0 else None


def time_remaining(trainer) -> float | None:
    """Seconds of training ``trainer.max_time`` still allows (its Timer callback), if set."""
    from lightning.pytorch.callbacks import Timer

    for callback in getattr(trainer, "callbacks", ()):
        if isinstance(callback, Timer):
            return callback.time_remaining()
    return None


def batch_size(batch) -> int:
    """Examples in a batch: the length of its labels, actions or episodes (0 if unknown)."""
    if isinstance(batch, dict):
        for key in ("labels", "action", "episodes", "block"):
            if key in batch and hasattr(batch[key], "__len__"):
                return len(batch[key])
    return 0
