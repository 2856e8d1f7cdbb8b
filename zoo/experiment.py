"""What every recipe needs: a config with dotted overrides, a logger, checkpoints that resume.

Recipes stay short scripts that say *what* is trained; this module says *how* runs are set up
the same way everywhere (W&B offline by default, a ``last.ckpt`` written every few hundred
steps, automatic resumption when a run directory already holds one).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

import lightning as L
from lightning.pytorch.callbacks import LearningRateMonitor, ModelCheckpoint
from omegaconf import DictConfig, OmegaConf


def load_config(default: str | os.PathLike | Sequence[str | os.PathLike], argv: Sequence[str]) -> DictConfig:
    """The recipe's YAML (or several, merged in order), then ``--config other.yaml`` files,
    then ``key.sub=value`` overrides."""
    argv = list(argv)
    files = [Path(default)] if isinstance(default, (str, os.PathLike)) else [Path(f) for f in default]
    while "--config" in argv:
        at = argv.index("--config")
        files.append(Path(argv[at + 1]))
        del argv[at : at + 2]
    unknown = [arg for arg in argv if "=" not in arg]
    if unknown:
        raise SystemExit(f"arguments must be key=value overrides (or --config FILE); got {unknown}")
    config = OmegaConf.merge(*(OmegaConf.load(f) for f in files), OmegaConf.from_dotlist(argv))
    OmegaConf.resolve(config)
    return config


def start_run(config: DictConfig) -> Path:
    """What every run does first: thread count, seeds, the run directory and its config.yaml."""
    import torch

    if config.get("threads"):
        torch.set_num_threads(config.threads)
    L.seed_everything(config.seed, workers=True)
    from lightning.pytorch.utilities import rank_zero_only

    run_dir = Path(config.run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise SystemExit(f"run_dir {str(run_dir)!r} is a file, not a directory")
    run_dir.mkdir(parents=True, exist_ok=True)
    if rank_zero_only.rank == 0:  # DDP launches every rank through this script
        OmegaConf.save(config, run_dir / "config.yaml")
    return run_dir


def make_logger(config: DictConfig, run_dir: Path, name: str):
    """W&B (offline unless WANDB_MODE/WANDB_API_KEY say otherwise), CSV, or none."""
    kind = config.get("kind", "wandb")
    if kind in (None, "none", False):
        return False
    if kind == "csv":
        from lightning.pytorch.loggers import CSVLogger

        return CSVLogger(str(run_dir), name="logs")
    if kind != "wandb":
        raise ValueError(f"logger.kind must be wandb, csv or none; got {kind!r}")
    from lightning.pytorch.loggers import WandbLogger

    offline = os.environ.get("WANDB_MODE", config.get("mode", "offline")) == "offline" and not os.environ.get("WANDB_API_KEY")
    return WandbLogger(project=config.get("project", "zoo"), name=name, save_dir=str(run_dir), offline=offline,
                       log_model=False)


def checkpointing(run_dir: Path, every_n_train_steps: int, monitor: str | None = None, mode: str = "min") -> list:
    """Checkpoints for model selection and for resuming.

    ``best-epochNNN.ckpt`` is the best epoch by ``monitor``; ``epochNNN.ckpt`` is kept for
    every epoch; ``last.ckpt`` (see :class:`ResumeCheckpoint`) is what an interrupted run
    continues from.
    """
    from zoo.callbacks.resume_checkpoint import ResumeCheckpoint

    directory = run_dir / "checkpoints"
    callbacks = []
    if monitor:
        callbacks.append(ModelCheckpoint(dirpath=directory, filename="best-epoch{epoch:03d}", monitor=monitor, mode=mode,
                                         save_top_k=1, auto_insert_metric_name=False))
    callbacks.append(ModelCheckpoint(dirpath=directory, filename="epoch{epoch:03d}", save_top_k=-1, every_n_epochs=1,
                                     auto_insert_metric_name=False))
    callbacks.append(ResumeCheckpoint(directory / "last.ckpt", every_n_train_steps))
    return callbacks


def resume_path(run_dir: Path) -> str | None:
    """The run's ``last.ckpt`` if an earlier (interrupted) run left one, so training continues."""
    last = run_dir / "checkpoints" / "last.ckpt"
    return str(last) if last.is_file() else None


def load_run_checkpoint(path: str | os.PathLike, run_dir: str | os.PathLike) -> dict:
    """A checkpoint of this run, loaded without unpickling code (``weights_only=True``).

    ``path`` usually comes from a checkpoint callback's state inside ``last.ckpt``, which
    is data a file on disk decides: it must name a file inside ``run_dir``.
    """
    import torch

    from zoo.errors import UnsafeDestinationError

    resolved, root = Path(path).resolve(), Path(run_dir).resolve()
    if root not in resolved.parents:
        raise UnsafeDestinationError(f"refusing to load checkpoint {str(path)!r}: it lies outside the run directory {str(run_dir)!r}")
    return torch.load(resolved, map_location="cpu", weights_only=True)


def make_trainer(config: DictConfig, run_dir: Path, callbacks: list, logger) -> L.Trainer:
    """A Trainer from the recipe's ``trainer`` section; progress goes to the log when the
    output is not a terminal (background runs), to a progress bar otherwise."""
    from zoo.callbacks.progress_log import ProgressLog

    options = OmegaConf.to_container(config, resolve=True)
    if logger is not False:
        callbacks = [*callbacks, LearningRateMonitor()]
    if not sys.stderr.isatty():
        callbacks = [*callbacks, ProgressLog()]
    return L.Trainer(default_root_dir=str(run_dir), callbacks=callbacks, logger=logger, **options)
