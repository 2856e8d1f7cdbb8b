"""What a fit will cost: the clock and the arithmetic behind :class:`zoo.callbacks.fit_progress.ProgressLog`'s
estimate of when training ends.

A fit spends its time in training batches and in validation passes (on Blocks mostly the
rollouts of the tuning and dev sets, which hold no batches at all). An estimate that counts the
training batches alone comes out low by the validation time, and one measured from the first
batch misses the start-up already spent; so the clock times both, from the start of training.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class FitClock:
    """Where a fit's time goes, as the callback hooks report it. A training batch is timed from
    the previous batch end to its own, so data loading and the epochs' checkpoints count and the
    validation passes in between do not; the first batch, timed from the start of training, holds
    the start-up (workers, first allocations) and is kept apart."""

    started: float | None = None
    first_batch: float | None = None
    """Seconds from the start of training to the first batch end."""
    batches: int = 0
    """Batches timed from the batch end before them."""
    seconds: float = 0.0
    """What those batches took."""
    validations: list[float] = field(default_factory=list)
    """Seconds of each validation pass (the sanity check not included)."""
    _last: float | None = None
    _validation_started: float | None = None
    _validating: float = 0.0

    def start(self, now: float) -> None:
        self.started = self._last = now

    def since_start(self, now: float) -> float:
        return now - self.started if self.started is not None else 0.0

    def batch_end(self, now: float) -> None:
        if self._last is None:
            self.start(now)
            return
        took = max(now - self._last - self._validating, 0.0)
        if self.first_batch is None:
            self.first_batch = took
        else:
            self.batches += 1
            self.seconds += took
        self._last, self._validating = now, 0.0

    @property
    def batch_ends(self) -> int:
        """Training batches ended since the start."""
        return self.batches + (self.first_batch is not None)

    def validation_start(self, now: float) -> None:
        self._validation_started = now

    def validation_end(self, now: float) -> bool:
        """Record the pass that :meth:`validation_start` began; False if none had."""
        if self._validation_started is None:
            return False
        took = now - self._validation_started
        self.validations.append(took)
        self._validating += took
        self._validation_started = None
        return True

    def rate(self) -> float | None:
        """Training batches per second: measured after the first batch when any were, else the first
        batch's own (start-up included, so rather slow than fast); None before any batch."""
        if self.batches and self.seconds > 0:
            return self.batches / self.seconds
        if self.first_batch:
            return 1.0 / self.first_batch
        return None

    def validation_seconds(self) -> float | None:
        """The mean validation pass timed so far, or None."""
        return sum(self.validations) / len(self.validations) if self.validations else None


def validations_left(trainer, done: int, left: int, per_epoch: int, ends_early: bool = False) -> int:
    """Validation passes Lightning will run in the ``left`` training batches after the ``done``
    batches of the run so far (counted from epoch 0's first batch; ``per_epoch`` batches an epoch):
    one at every ``val_check_batch``-th batch of an epoch validated by ``check_val_every_n_epoch``
    (every epoch end by default), or every ``val_check_batch`` batches of the run when
    ``check_val_every_n_epoch`` is None; plus the one before an early end (``ends_early``:
    ``trainer.max_steps`` or ``max_time`` ends training between two)."""
    if not getattr(trainer, "enable_validation", True) or not per_epoch or not val_batches(trainer):
        return 0
    every_epochs = getattr(trainer, "check_val_every_n_epoch", 1)
    every = getattr(trainer, "val_check_batch", None)
    if not isinstance(every, int) or every <= 0 or every_epochs is not None and every > per_epoch:
        every = per_epoch
    end = done + left

    def validated_epoch(epoch: int) -> bool:
        return every_epochs is None or (epoch + 1) % every_epochs == 0

    def points_up_to(batch: int) -> int:
        """Validation points at or before the ``batch``-th batch of the run."""
        if every_epochs is None:
            return batch // every
        epochs, into = divmod(batch, per_epoch)
        whole = epochs // every_epochs * (per_epoch // every)
        return whole + (into // every if validated_epoch(epochs) else 0)

    passes = points_up_to(end) - points_up_to(done)
    if ends_early and left and points_up_to(end) == points_up_to(end - 1) and validated_epoch((end - 1) // per_epoch):
        passes += 1
    return passes


def val_batches(trainer) -> int:
    """The validation batches of one pass, over every validation set (the ones of unknown length left out)."""
    sets = getattr(trainer, "num_val_batches", None) or []
    sets = list(sets) if isinstance(sets, (list, tuple)) else [sets]
    return int(sum(count for count in sets if count != float("inf")))


def validation_guess(trainer, batch_seconds: float) -> float:
    """A validation pass not timed yet: its batches, each as long as a training batch (a forward
    pass over a bigger batch, against many candidates on LIGHT, costs about what a training step
    does). The first timed pass replaces it; rollout evaluation (Blocks) holds no batches and is
    only known then."""
    return val_batches(trainer) * batch_seconds


@dataclass
class Estimate:
    """When training ends: ``elapsed`` seconds since it started, ``left`` to go (``batches`` at
    ``rate`` and ``passes`` validations of ``each`` seconds; ``timed``: ``each`` was measured,
    not guessed; ``capped``: ``trainer.max_time`` ends it first)."""

    elapsed: float
    left: float
    batches: int
    rate: float
    passes: int
    each: float
    timed: bool
    capped: bool = False

    @property
    def total(self) -> float:
        return self.elapsed + self.left

    def __str__(self) -> str:
        validation = "no validation"
        if self.passes:
            validation = (f"{self.passes:,} validation pass{'es' if self.passes > 1 else ''} of ~{duration(self.each)}"
                          f"{' each' if self.passes > 1 else ''}{'' if self.timed else ' (guessed until one is timed)'}")
        capped = "; trainer.max_time stops it then" if self.capped else ""
        return (f"training ends in about {duration(self.left)}, {duration(self.total)} after it started: "
                f"the {self.batches:,} training steps left at {self.rate:.2f} batches/s, {validation}{capped}")


def estimate(trainer, clock: FitClock, done: int, batches: int, ends_early: bool, now: float,
             time_left: float | None = None) -> Estimate | None:
    """The estimate after ``done`` batches of the run with ``batches`` left (``ends_early``: they end
    before the last epoch's end), at most ``time_left`` of training (``trainer.max_time``) and the
    validation after it; None before a batch was timed."""
    rate = clock.rate()
    if not rate:
        return None
    per_epoch = int(trainer.num_training_batches)
    timed = clock.validation_seconds()
    each = timed if timed is not None else validation_guess(trainer, 1.0 / rate)
    passes = validations_left(trainer, done, batches, per_epoch, ends_early)
    left = batches / rate + passes * each
    capped = time_left is not None and max(time_left, 0.0) + each < left
    if capped:
        left = max(time_left, 0.0) + each
    return Estimate(clock.since_start(now), left, batches, rate, passes, each, timed is not None, capped)


def duration(seconds: float) -> str:
    """``1.5 h``, ``12 min``, ``4.5 min`` or ``40 s``."""
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"
