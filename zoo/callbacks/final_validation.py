"""``ValidateAtMaxSteps``: a run that ends on ``trainer.max_steps`` still gets its final evaluation.

Lightning validates at the end of an epoch; a run stopped by ``max_steps`` in the middle of
one (``trainer.max_steps=20`` for a first look) would end with no validation at all: no
tuning or dev error, no best checkpoint, an empty ``metrics.jsonl``. Asking the loop to stop
at the step that reaches ``max_steps`` makes Lightning validate before it stops, as it does
for early stopping.
"""

from __future__ import annotations

import lightning as L


def max_steps_reached(trainer) -> bool:
    """Whether ``trainer.max_steps`` is set and the run has taken that many optimizer steps."""
    max_steps = getattr(trainer, "max_steps", -1)
    return max_steps is not None and max_steps > 0 and trainer.global_step >= max_steps


def is_final_validation(trainer) -> bool:
    """Whether the validation running now is the run's last: its last epoch, or the step
    that reached ``max_steps``. Evaluations done every few epochs run at this one too."""
    epochs = getattr(trainer, "max_epochs", None)
    last_epoch = epochs not in (None, -1) and trainer.current_epoch + 1 >= epochs
    return last_epoch or max_steps_reached(trainer)


class ValidateAtMaxSteps(L.Callback):
    """Stops the loop at the batch that reaches ``max_steps``, so the validation runs first."""

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if max_steps_reached(trainer) and not trainer.should_stop:
            trainer.should_stop = True  # Lightning validates before an early stop (its training epoch loop)
