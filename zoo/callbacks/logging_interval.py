"""``EpochLoggingInterval``: every epoch logs its training curve, however few batches it has.

Lightning logs training steps every ``trainer.log_every_n_steps`` (20 in the recipes) counted
over the whole run; a small run (``--tiny``, ``data.limit``) with fewer batches than that in all
would log no training step at all, and Lightning says so in a notice at every such run. The
interval is capped at one epoch's batches here, so the notice is moot and :mod:`zoo.run_logging`
silences it. Only how often metrics are logged changes; nothing trained does.
"""

from __future__ import annotations

import lightning as L


class EpochLoggingInterval(L.Callback):
    """Caps ``trainer.log_every_n_steps`` at the batches of one epoch."""

    def on_train_start(self, trainer, pl_module) -> None:
        batches = trainer.num_training_batches
        if batches != float("inf") and 0 < batches < trainer.log_every_n_steps:
            trainer.log_every_n_steps = int(batches)
