"""``TrainClock``: the wall-clock seconds a run has spent in ``fit``, summed across resumes.

A run that is stopped and resumed (every long run here is) would otherwise report only its
last leg, and rerunning a finished run would report the second it took to notice it was done.
The total is saved in every checkpoint (a plain float, so ``weights_only=True`` loads it) and
restored with the rest of the run's state.
"""

from __future__ import annotations

import time

import lightning as L


class TrainClock(L.Callback):
    """Seconds of training so far, this process's share included while it trains."""

    def __init__(self) -> None:
        self._before = 0.0
        self._started: float | None = None

    @property
    def seconds(self) -> float:
        running = time.perf_counter() - self._started if self._started is not None else 0.0
        return self._before + running

    def on_train_start(self, trainer, pl_module) -> None:
        self._started = time.perf_counter()

    def on_train_end(self, trainer, pl_module) -> None:
        self._before, self._started = self.seconds, None

    def on_exception(self, trainer, pl_module, exception) -> None:
        self.on_train_end(trainer, pl_module)

    def state_dict(self) -> dict[str, float]:
        return {"seconds": self.seconds}

    def load_state_dict(self, state_dict: dict[str, float]) -> None:
        self._before = float(state_dict.get("seconds", 0.0))
