"""``GoalEvaluation``: how well a goal reader reads, during training."""

from __future__ import annotations

import time
from typing import Sequence

import lightning as L

from zoo.blocks.goals import GoalTargets, goal_report
from zoo.blocks.records import Example


class GoalEvaluation(L.Callback):
    """At the end of every ``every_n_epochs``-th validation and of the run's last, logs the
    reader's ``<prefix>/goal_error`` (mean, block lengths), ``goal_error_median``,
    ``within_one_block`` and ``block_accuracy`` on ``targets``; with ``carry_out``, also
    ``<prefix>/carried_out_error``: the task error of the predictions carried out by the
    shortest-path expert, what the reading is worth to a perfect controller (a few seconds on
    dev's 1,719 examples)."""

    def __init__(self, targets: GoalTargets, examples: Sequence[Example], prefix: str, every_n_epochs: int = 1,
                 carry_out: bool = False):
        if len(targets) != len(examples):
            raise ValueError(f"{prefix}: {len(targets)} goal targets for {len(examples)} examples")
        self.targets, self.examples, self.prefix = targets, examples, prefix
        self.every_n_epochs, self.carry_out = every_n_epochs, carry_out

    def on_validation_epoch_end(self, trainer: L.Trainer, pl_module) -> None:
        """Runs inside validation, so a checkpoint callback monitoring these figures sees them."""
        from zoo.callbacks.final_validation import is_final_validation
        from zoo.models.blocks.goal import predicted_goals

        if trainer.sanity_checking or (trainer.current_epoch + 1) % self.every_n_epochs and not is_final_validation(trainer):
            return
        started = time.perf_counter()
        goal, block = predicted_goals(pl_module, self.targets)
        transitions = [example.transition for example in self.examples] if self.carry_out else None
        report = goal_report(goal, block, self.targets, transitions)
        report["seconds"] = time.perf_counter() - started
        pl_module.log_dict({f"{self.prefix}/{key}": value for key, value in report.items()}, prog_bar=False)
