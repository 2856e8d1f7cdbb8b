"""``FiniteTraining``: a run whose loss or weights stop being finite ends there, in one line,
with nothing exported and no checkpoint of the broken weights.

A learning rate far too large (or a reward that overflows) turns the weights into inf and nan
within a step or two. Left alone, the run trains on, its rollouts still finish (a nan policy
acts greedily on garbage), and the best epoch by tuning error can be a nan one: exported as
the run's policy without a word. Lightning's ``detect_anomaly`` would catch it inside
autograd, at several times the cost of every step; this checks the loss each step (one
scalar) and the weights only where they are kept (every checkpoint, every validation).

The error is a :class:`NonFiniteTrainingError`; :func:`zoo.experiment.fit_resuming` turns it
into the run's one-line exit before anything is exported. The checkpoints already written
hold the last finite weights, from which a rerun would diverge the same way: the message
asks for a new run with a smaller learning rate.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import lightning as L
import torch

from zoo.errors import ZooError


class NonFiniteTrainingError(ZooError, ArithmeticError):
    """The loss or a weight became inf or nan; the message is one line naming the step and the run."""


def non_finite_parameter(module: torch.nn.Module) -> str | None:
    """The name of the first parameter of ``module`` holding an inf or nan, or None. One
    device synchronisation for all of them."""
    named = [(name, parameter) for name, parameter in module.named_parameters() if parameter.numel()]
    if not named:
        return None
    finite = torch.stack([parameter.detach().isfinite().all() for _, parameter in named])
    if bool(finite.all()):
        return None
    return named[int((~finite).nonzero()[0])][0]


def exit_unless_finite(module: torch.nn.Module, destination: str | Path) -> None:
    """Exit in one line instead of exporting ``module`` to ``destination`` when a weight is not
    finite (a checkpoint written before this guard, or weights that diverged after the last
    check); called on every rank, which hold the same weights, so all of them stop."""
    name = non_finite_parameter(module)
    if name is not None:
        raise SystemExit(f"refusing to export {destination}: weight {name!r} holds inf or nan (the run diverged); "
                         f"train again in a new run_dir with a smaller learning rate")


class FiniteTraining(L.Callback):
    """Stops the fit with :class:`NonFiniteTrainingError` at the first non-finite training loss
    (checked after every batch) or weight (checked before every checkpoint is written and every
    validation). Under DDP every rank takes the same decision (any rank's nan stops all), so
    none waits on a collective the others have left."""

    def __init__(self, run_dir: str | Path):
        self.run_dir = Path(run_dir)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        loss = outputs.get("loss") if isinstance(outputs, Mapping) else outputs
        bad = isinstance(loss, torch.Tensor) and not bool(loss.detach().isfinite().all())
        if trainer.strategy.reduce_boolean_decision(bad, all=False):
            shown = f"{float(loss.detach().float().mean()):g}" if bad else "inf or nan on another process"
            raise self._stop(trainer, f"the training loss is {shown}")

    def on_validation_start(self, trainer, pl_module) -> None:
        self._check_weights(trainer, pl_module)

    def on_save_checkpoint(self, trainer, pl_module, checkpoint) -> None:
        self._check_weights(trainer, pl_module)  # raised here, the checkpoint is not written

    def _check_weights(self, trainer, pl_module) -> None:
        name = non_finite_parameter(pl_module)
        if trainer.strategy.reduce_boolean_decision(name is not None, all=False):
            raise self._stop(trainer, f"weight {name!r} holds inf or nan" if name else "a weight holds inf or nan")

    def _stop(self, trainer, what: str) -> NonFiniteTrainingError:
        return NonFiniteTrainingError(
            f"training diverged at step {trainer.global_step} of the run in {self.run_dir}: {what}; nothing was "
            f"exported and its checkpoints keep the last finite weights; train again in a new run_dir with a "
            f"smaller learning rate")
