"""``ResumeCheckpoint``: the one ``last.ckpt`` a long run resumes from.

It is rewritten every N training steps, so a kill loses at most N steps, and again at the end
of every epoch, after the model-selection checkpoints have updated their best scores,
so that a run killed between an epoch's end and its next step checkpoint resumes with its
choice of best epoch intact. (Two ModelCheckpoints with ``save_last`` cannot do this: they
write competing ``last-vN.ckpt`` files.)
"""

from __future__ import annotations

import os
from pathlib import Path

from lightning.pytorch.callbacks import Checkpoint


class ResumeCheckpoint(Checkpoint):
    """Lightning runs Checkpoint callbacks after all others, in the order given, so place this
    after the ModelCheckpoints whose state it must capture."""

    def __init__(self, path: str | os.PathLike, every_n_train_steps: int = 200):
        self.path = Path(path)
        self.every_n_train_steps = every_n_train_steps
        self._last_saved_step = -1

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        # Crossing a multiple, not landing on one: a batch may make several optimizer steps
        # (the per-episode bandit updates), so global_step can jump past it.
        every = self.every_n_train_steps
        if batch_idx + 1 >= trainer.num_training_batches:
            # Not after an epoch's last batch: resumed from there, Lightning skips that epoch's
            # validation, and with it the epoch's part in choosing the best. The epoch-end save
            # below comes after validation; a kill before it redoes the last batch instead.
            return
        if every and trainer.global_step // every > max(self._last_saved_step, 0) // every:
            self.save(trainer)

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        # ModelCheckpoint picks its best at train-epoch end (validation has run by then);
        # as the last Checkpoint callback this save comes after, with that choice in it.
        self.save(trainer, force=True)

    def save(self, trainer, force: bool = False) -> None:
        if trainer.global_step == self._last_saved_step and not force:
            return
        self._last_saved_step = trainer.global_step
        # everything a resumed run needs; never half-written: the run's CheckpointIO
        # (zoo.checkpoint_io.AtomicCheckpointIO) stages beside the file, fsyncs and renames
        trainer.save_checkpoint(self.path, weights_only=False)
