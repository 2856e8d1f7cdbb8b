"""``GracefulStop``: SIGTERM (a scheduler, ``kill``, the end of a session) or Ctrl-C stops a
run at the next batch boundary with a resumable ``last.ckpt``, within one batch's time.

Lightning by itself ends a SIGTERMed fit after the current batch (``SIGTERMException``) and
a Ctrl-C'd one at once, saving nothing in either case, so the work since the last periodic
checkpoint is lost. This callback writes ``last.ckpt`` at that batch boundary first;
:func:`zoo.experiment.fit_resuming` then exits with a message, exporting nothing, and the code a
shell gives a process that signal ended, 128 + its number (:class:`StoppedOnRequest`): 143 for
SIGTERM, 130 for Ctrl-C. A script or scheduler tells a run stopped on request (resume it with the
same command) from one that failed (1) or finished (0).
"""

from __future__ import annotations

import logging
import signal
import threading

import lightning as L

from zoo.callbacks.resume_checkpoint import ResumeCheckpoint

log = logging.getLogger("zoo.stop")


class StoppedOnRequest(SystemExit):
    """A run a signal stopped, its state saved: exits with 128 + the signal's number (143 for
    SIGTERM, 130 for SIGINT), as a shell reports a process that signal ended, and not 1, which
    says the run failed. ``str()`` is the message (how to resume)."""

    def __init__(self, message: str, signum: int = signal.SIGTERM):
        super().__init__(128 + int(signum))
        self.message = message

    def __str__(self) -> str:
        return self.message


class GracefulStop(L.Callback):
    """Writes the run's ``last.ckpt`` through its :class:`ResumeCheckpoint` when asked to stop."""

    def __init__(self, checkpoint: ResumeCheckpoint, signals: tuple[int, ...] = (signal.SIGTERM, signal.SIGINT)):
        self.checkpoint = checkpoint
        self.signals = signals
        self.requested: int | None = None
        self._previous: dict[int, object] = {}

    def _request(self, signum, frame) -> None:
        if self.requested is not None:  # a second signal: stop now, as the default would
            previous = self._previous.get(signum)
            if callable(previous):
                previous(signum, frame)
            raise KeyboardInterrupt
        self.requested = signum
        log.warning("%s received: stopping after this batch with a checkpoint (send it again to stop at once)",
                    signal.Signals(signum).name)

    def on_fit_start(self, trainer, pl_module) -> None:
        if threading.current_thread() is threading.main_thread():
            for signum in self.signals:
                self._previous[signum] = signal.signal(signum, self._request)

    def on_fit_end(self, trainer, pl_module) -> None:
        self._restore()

    def on_exception(self, trainer, pl_module, exception) -> None:
        self._restore()

    def _restore(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if self.requested is None:
            return
        self.checkpoint.save(trainer, force=True)
        log.warning("saved %s; the same command resumes from it", self.checkpoint.path)
        trainer.should_stop = True

    @staticmethod
    def requested_on(trainer) -> bool:
        """Whether a signal asked ``trainer``'s run to stop."""
        return GracefulStop.signal_on(trainer) is not None

    @staticmethod
    def signal_on(trainer) -> int | None:
        """The signal that asked ``trainer``'s run to stop, or None."""
        return next((c.requested for c in trainer.callbacks if isinstance(c, GracefulStop) and c.requested is not None),
                    None)
