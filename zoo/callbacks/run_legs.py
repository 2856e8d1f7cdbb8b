"""``RunLegs``: every leg of a run (each process that trained it), so its totals are true.

A long run is stopped and resumed, sometimes with an allowed change (a longer schedule). Each
leg records the global step it started from and reached, its world size, batch size and
gradient accumulation, its training seconds and the configuration keys it changed; the list
is saved in every checkpoint (plain data: ``weights_only=True`` loads it) and restored on
resume. A leg killed between checkpoints is recorded as far as its last checkpoint: the
steps after it are trained again, and counted once. A process that trained nothing (a rerun
of a finished run) adds no leg.
"""

from __future__ import annotations

import time
from typing import Any

import lightning as L


class RunLegs(L.Callback):
    def __init__(self, batch_size: int, changes: list[dict] | tuple = ()) -> None:
        self.batch_size = batch_size
        self.changes = [dict(change) for change in changes]
        self._previous: list[dict[str, Any]] = []
        self._current: dict[str, Any] | None = None
        self._started = 0.0
        self._trainer = None

    def on_train_start(self, trainer, pl_module) -> None:
        self._trainer, self._started = trainer, time.perf_counter()
        self._current = {"from_step": trainer.global_step, "to_step": trainer.global_step,
                         "world_size": trainer.world_size, "batch_size": self.batch_size,
                         "accumulate_grad_batches": trainer.accumulate_grad_batches, "seconds": 0.0,
                         "allowed_changes": self.changes,
                         "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}

    def _update(self) -> None:
        if self._current is not None and self._trainer is not None:
            self._current["to_step"] = self._trainer.global_step
            self._current["seconds"] = round(time.perf_counter() - self._started, 3)

    def on_train_end(self, trainer, pl_module) -> None:
        self._update()
        self._trainer = None

    def on_exception(self, trainer, pl_module, exception) -> None:
        self._update()
        self._trainer = None

    @property
    def legs(self) -> list[dict[str, Any]]:
        """The run's legs so far, this one included once it has trained a step."""
        self._update()
        current = [self._current] if self._current and self._current["to_step"] > self._current["from_step"] else []
        return [*self._previous, *current]

    @property
    def trained_here(self) -> bool:
        """Whether this process trained at least one step."""
        self._update()
        return bool(self._current and self._current["to_step"] > self._current["from_step"])

    def state_dict(self) -> dict[str, Any]:
        return {"legs": [dict(leg) for leg in self.legs]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._previous = [dict(leg) for leg in state_dict.get("legs", [])]


def totals(legs: list[dict[str, Any]]) -> dict[str, Any]:
    """What the legs add up to: training seconds and the examples the optimiser saw."""
    return {"train_seconds": round(sum(leg["seconds"] for leg in legs), 1),
            "examples_seen": sum((leg["to_step"] - leg["from_step"]) * leg["accumulate_grad_batches"]
                                 * leg["batch_size"] * leg["world_size"] for leg in legs)}
