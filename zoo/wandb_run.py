"""One W&B run per run directory: every leg of a run (the first process, a resume after a stop,
an extension with ``resume.allow_changed``) logs into the same W&B run, whose config is the whole
recipe; a rerun that trains nothing makes none.

The W&B run id is drawn once, on first use, and kept in the run directory (:data:`RUN_ID_NAME`),
so it moves with the run folder; a stage of the run (the Blocks warm-up, in ``run_dir/warmup``)
logs into a W&B run of its own, ``<id>-warmup``, in the run's group (``<id>``). The W&B run is
started lazily, at the first metric: a rerun of a finished run, which logs none, starts none.
"""

from __future__ import annotations

import re
import secrets
import sys
from pathlib import Path

from lightning.pytorch.loggers import WandbLogger
from lightning.pytorch.utilities import rank_zero_only

from zoo.safe_writes import atomic_write_text, marker_record
from zoo.run_directory import STAGE_KIND, RunDirectoryError

RUN_ID_NAME = "wandb-run-id"
"""The file in a run directory that holds its W&B run id (one line)."""

_ID = re.compile(r"[a-z0-9]{8,64}")


def wandb_run_id(run_dir: Path, write: bool = True) -> str | None:
    """The W&B run id of the run in ``run_dir``: the one kept there, or a new random one kept
    there now (``write``; a DDP worker only reads, and gets None before rank 0 wrote it). Not
    derived from the configuration: two run directories of one recipe are two W&B runs."""
    path = Path(run_dir) / RUN_ID_NAME
    if path.is_symlink() or path.exists() and not path.is_file():
        raise RunDirectoryError(f"{str(path)!r} is not a file zoo wrote (a link or a folder); remove it or "
                                "use a new run_dir")
    if path.is_file():
        kept = path.read_text(errors="replace").strip()
        if not _ID.fullmatch(kept):
            raise RunDirectoryError(f"{str(path)!r} holds no W&B run id zoo wrote ({kept[:40]!r}); remove it to "
                                    "start a new W&B run, or use a new run_dir")
        return kept
    if not write:
        return None
    drawn = secrets.token_hex(6)  # 12 of [0-9a-f]: what W&B's own ids look like, and unique enough
    atomic_write_text(path, drawn + "\n")
    return drawn


class RunWandbLogger(WandbLogger):
    """Lightning's W&B logger for a zoo run. The W&B run starts when something is logged, not when
    Lightning sets the fit up (it asks every logger for its ``experiment`` then): a fit that trains
    nothing starts none. The recipe is the W&B config, given to ``wandb.init``; the model's
    hyper-parameters, which Lightning logs at every fit, are not sent. A W&B run left open by an
    earlier run in this process (a warm-up, a notebook's previous run) is finished before this one
    starts, not written into (Lightning would reuse it, with a warning)."""

    def log_hyperparams(self, params) -> None:
        """Nothing: the W&B config is the recipe, set when the W&B run starts."""

    @property
    def experiment(self):
        if self._experiment is None and rank_zero_only.rank == 0:
            return StartsOnUse(self.start)
        return super().experiment

    def start(self):
        """The W&B run, started now if it is not yet (resuming this run's, ``resume="allow"``)."""
        if self._experiment is None:
            wandb = sys.modules.get("wandb")
            if wandb is not None and wandb.run is not None:
                wandb.finish()
        return super().experiment


class StartsOnUse:
    """What :attr:`RunWandbLogger.experiment` is until the W&B run starts: the run itself the
    moment any of it is used (``experiment.log(...)``, ``experiment.config``)."""

    def __init__(self, start):
        self._start = start

    def __getattr__(self, name: str):
        return getattr(self._start(), name)


def make_wandb_logger(recipe: dict, run_dir: Path, name: str, project: str, offline: bool,
                      rank: int = 0) -> RunWandbLogger:
    """The W&B logger of the run (or stage) in ``run_dir``, resuming its W&B run (see the module's text)."""
    stage = marker_record(run_dir).get("kind") == STAGE_KIND
    run_id = wandb_run_id(run_dir.parent if stage else run_dir, write=rank == 0)
    wandb_id = f"{run_id}-{run_dir.name}" if stage and run_id else run_id
    logger = RunWandbLogger(project=project, name=f"{run_dir.parent.name}/{name}" if stage else name,
                            save_dir=str(run_dir), offline=offline, log_model=False, id=wandb_id, resume="allow",
                            group=run_id, job_type=run_dir.name if stage else None, config=recipe)
    # Lightning 2.6 always passes wandb.init(anonymous=None), which wandb >= 0.22 answers with a
    # deprecation warning at every run; the key does nothing, so it is not sent.
    logger._wandb_init.pop("anonymous", None)
    return logger


def finish_wandb() -> None:
    """End the W&B run this process has open, if any, so its files are complete when the
    recipe returns (an offline run's folder is final; the next run in this process starts its own)."""
    wandb = sys.modules.get("wandb")
    if wandb is not None and wandb.run is not None:
        wandb.finish()
