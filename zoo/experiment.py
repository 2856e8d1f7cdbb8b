"""What every recipe needs: a config with dotted overrides, a logger, checkpoints that resume.

Recipes stay short scripts that say *what* is trained; this module says *how* runs are set up
the same way everywhere (W&B offline by default, a ``last.ckpt`` written every few hundred
steps, automatic resumption when a run directory already holds one).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import lightning as L
from lightning.pytorch.callbacks import LearningRateMonitor
from omegaconf import DictConfig, OmegaConf

from zoo.run_logging import configure_output
from zoo.recipe_schema import check_recipe_config

if TYPE_CHECKING:
    from zoo.run_directory import RunDirectory

OPEN_SECTIONS = ("trainer",)
"""Sections whose keys are another API's arguments (``lightning.Trainer``'s), checked against it."""

OPEN_MAPPINGS = ("data.limit", "data.procedural_sizes", "model.options")
"""Mappings whose keys another part checks: split names to sizes (the data module checks the
names), a model's constructor arguments (the recipe checks them against the constructor)."""


def one_line(error: Exception) -> str:
    """An error's message on one line: omegaconf adds ``full_key`` and ``object_type`` lines."""
    return " ".join(line.strip() for line in str(error).splitlines() if line.strip()) or type(error).__name__


def load_config(default: str | os.PathLike | Sequence[str | os.PathLike], argv: Sequence[str]) -> DictConfig:
    """The recipe's YAML (or several, merged in order), then ``--config other.yaml`` files,
    then ``key.sub=value`` overrides; ``--help`` prints the keys and their defaults;
    ``--verbose`` keeps the libraries' own output (banners, tips, summaries), which is
    otherwise off (:func:`zoo.run_logging.configure_output`).

    Every key given must exist in the recipe's YAML (``trainer.*``: be a ``lightning.Trainer``
    argument), and its value must have the default's type, or the run stops before any work
    with the bad key and the closest valid one: a typo must not silently train something else.
    """
    argv = list(argv)
    files = [Path(default)] if isinstance(default, (str, os.PathLike)) else [Path(f) for f in default]
    if "--help" in argv or "-h" in argv:
        print_help(files, script_command())
        raise SystemExit(0)
    configure_output(verbose="--verbose" in argv)
    argv = [arg for arg in argv if arg != "--verbose"]
    extra_files = []
    while "--config" in argv:
        at = argv.index("--config")
        if at + 1 >= len(argv):
            raise SystemExit("--config needs a file")
        extra_files.append(Path(argv[at + 1]))
        del argv[at : at + 2]
    unknown = [arg for arg in argv if "=" not in arg]
    if unknown:
        raise SystemExit(f"arguments must be key=value overrides (or --config FILE, --help, --verbose); got {unknown}")
    try:
        defaults = OmegaConf.merge(*(OmegaConf.load(f) for f in files))
        given = OmegaConf.merge(*(OmegaConf.load(f) for f in extra_files), OmegaConf.from_dotlist(argv))
    except Exception as error:  # omegaconf's grammar and YAML errors
        raise SystemExit(f"cannot read the configuration: {one_line(error)}") from None
    defaults = with_option_defaults(defaults, given)
    validate_overrides(defaults, given)
    config = OmegaConf.merge(defaults, given)
    OmegaConf.resolve(config)
    check_recipe_config(config)  # every value's type, range and choices (zoo/recipe_schema.py)
    return config


def script_command() -> str:
    """How the running recipe script was started (``python recipes/light_bi.py``), for its usage line."""
    script = sys.argv[0] if sys.argv and sys.argv[0].endswith(".py") else "RECIPE"
    return f"python {script}"


def with_option_defaults(defaults: DictConfig, given: DictConfig | None = None) -> DictConfig:
    """``defaults`` with ``model.options`` completed from the model's constructor (the one place
    each option's default is written; :func:`zoo.recipe_schema.option_defaults`), the recipe's own
    values on top: a run's config.yaml then records every option it trains with, and an option
    the YAML leaves out is still a known key."""
    from zoo.recipe_schema import option_defaults

    name = OmegaConf.select(given, "model.name", default=None) if given is not None else None
    name = name or OmegaConf.select(defaults, "model.name", default=None)
    try:
        options = option_defaults(str(name))
    except KeyError:  # not a recipe model: the schema names the problem
        return defaults
    completed = OmegaConf.create({"model": {"options": options}})
    return OmegaConf.merge(completed, defaults)


def print_help(files: Sequence[Path], command: str = "python RECIPE") -> None:
    """The recipe's configuration files, comments included, and the model's options with their
    defaults (from its constructor): every key with its default, under a usage line that starts
    with ``command`` (``zoo train light-bi-ranker``, ``python recipes/light_bi.py``)."""
    print(f"usage: {command} [key.sub=value ...] [--config FILE ...] [--verbose]\n")
    print("Override any key below on the command line (dotted), e.g. trainer.max_epochs=2; trainer.* takes any")
    print("lightning.Trainer argument.\n")
    for path in files:
        print(f"# ---- {path.name}")
        print(path.read_text())
    merged = OmegaConf.merge(*(OmegaConf.load(path) for path in files))
    completed = with_option_defaults(merged)
    if completed is not merged:
        name = completed.model.name
        print(f"# ---- model.options: {name}'s settings and their defaults (its class docstring says what each is)")
        print(OmegaConf.to_yaml(OmegaConf.create({"model": {"options": OmegaConf.to_container(
            completed.model.options)}})))


def _leaves(node, prefix: str = ""):
    """(dotted key, value) of every leaf of a config (dicts recurse; lists and empty dicts are
    leaves, so that ``key={}`` is type-checked like any other value)."""
    if isinstance(node, DictConfig):
        for key in node.keys():
            value = node._get_node(key)
            path = f"{prefix}{key}"
            if isinstance(value, DictConfig) and not value._is_none() and len(value):
                yield from _leaves(value, path + ".")
            else:
                yield path, value


def validate_overrides(defaults: DictConfig, given: DictConfig) -> None:
    """Raise SystemExit naming the first key of ``given`` that ``defaults`` does not have
    (with the closest one that exists) or whose value has the wrong type."""
    import difflib
    import inspect

    known = dict(_leaves(defaults))
    trainer_arguments = set(inspect.signature(L.Trainer.__init__).parameters) - {"self"}
    for key, node in _leaves(given):
        top = key.split(".", 1)[0]
        if top in OPEN_SECTIONS:
            name = key.split(".", 1)[1] if "." in key else ""
            if name.split(".", 1)[0] not in trainer_arguments:
                close = difflib.get_close_matches(name, sorted(trainer_arguments), n=1)
                hint = f"; did you mean {top}.{close[0]}?" if close else ""
                raise SystemExit(f"unknown config key {key!r}: not a lightning.Trainer argument{hint}")
        if key in known:
            if top not in OPEN_SECTIONS:  # Trainer arguments' types (unions: devices=auto or 2) are the schema's
                _check_type(key, known[key], node)
            continue
        if top in OPEN_SECTIONS or _free_form_parent(key, defaults) is not None:
            continue  # a Trainer argument, or inside a value the YAML leaves open (e.g. data.limit)
        close = difflib.get_close_matches(key, sorted(known), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise SystemExit(f"unknown config key {key!r}{hint} (python RECIPE --help lists them)")


def _free_form_parent(key: str, defaults: DictConfig) -> str | None:
    """The nearest enclosing key whose default is null or an open mapping, if any."""
    parts = key.split(".")
    for end in range(len(parts) - 1, 0, -1):
        parent = ".".join(parts[:end])
        if parent in OPEN_MAPPINGS:
            return parent
        node = OmegaConf.select(defaults, parent, default="__missing__")
        if node is None:
            return parent
        if isinstance(node, DictConfig) and not any(True for _ in node.keys()):
            return parent
    return None


def _check_type(key: str, default_node, given_node, numbers_interchangeable: bool = False) -> None:
    """The given value must have the default's type (ints pass for floats; null passes).
    ``numbers_interchangeable``: any number for a numeric default (Trainer arguments such as
    ``val_check_interval`` take an int or a float)."""
    default = default_node._value() if hasattr(default_node, "_value") else default_node
    value = given_node._value() if hasattr(given_node, "_value") else given_node
    if default is None or value is None or isinstance(default, str) and "${" in default:
        return
    if isinstance(value, str) and "${" in value:
        return
    expected = type(default)
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        return
    numeric = (int, float)
    if numbers_interchangeable and isinstance(default, numeric) and isinstance(value, numeric) \
            and not isinstance(default, bool) and not isinstance(value, bool):
        return
    if isinstance(default, bool) != isinstance(value, bool) or not isinstance(value, expected):
        names = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
        raise SystemExit(f"config key {key!r} expects {names.get(expected, expected.__name__)}, got {value!r}")


def start_run(config: DictConfig, work: str = "large") -> "RunDirectory":
    """What every run does first: thread count (``threads``, else chosen for ``work``:
    :mod:`zoo.threads`), seeds, and the run directory taken for this
    run (:class:`zoo.run_directory.RunDirectory`: its config.yaml checked or written, its lock
    held by rank 0 until ``close()``). A directory that cannot hold this run is refused in one
    line before anything is written."""
    from lightning.pytorch.utilities import rank_zero_only

    from zoo.threads import use_threads

    from zoo.run_directory import RunDirectory, RunDirectoryError

    try:  # DDP launches every rank through this script: rank 0 locks and writes, the others read
        run = RunDirectory.open(config, rank=rank_zero_only.rank)
    except RunDirectoryError as error:
        raise SystemExit(str(error)) from None
    use_threads(work, config.get("threads"))
    L.seed_everything(config.seed, workers=True)
    return run


def make_logger(recipe: DictConfig, run_dir: Path, name: str):
    """The logger ``recipe``'s ``logger`` section asks for: W&B (offline unless WANDB_MODE/WANDB_API_KEY
    say otherwise; one W&B run per run directory, resumed by every leg, its config the recipe:
    :mod:`zoo.wandb_run`), CSV, or none."""
    config = recipe.get("logger") or {}
    kind = config.get("kind", "wandb")
    if kind in (None, "none", False):
        return False
    if kind == "csv":
        from lightning.pytorch.loggers import CSVLogger

        return CSVLogger(str(run_dir), name="logs")
    if kind != "wandb":
        raise ValueError(f"logger.kind must be wandb, csv or none; got {kind!r}")
    from lightning.pytorch.utilities import rank_zero_only

    from zoo.run_directory import identity
    from zoo.wandb_run import make_wandb_logger

    offline = os.environ.get("WANDB_MODE", config.get("mode", "offline")) == "offline" and not os.environ.get("WANDB_API_KEY")
    return make_wandb_logger(identity(recipe), run_dir, name, project=config.get("project", "zoo"), offline=offline,
                             rank=rank_zero_only.rank)


def end_logging() -> None:
    """What a recipe does last, however it ends: the W&B run it logged into, if any, finished
    (its files complete; the next run in this process gets its own)."""
    from zoo.wandb_run import finish_wandb

    finish_wandb()


def checkpointing(run_dir: Path, every_n_train_steps: int, monitor: str | None = None, mode: str = "min") -> list:
    """Checkpoints for model selection and for resuming.

    ``best-epochNNN.ckpt`` is the best epoch by ``monitor``; ``epochNNN.ckpt`` is kept for
    every epoch; ``last.ckpt`` (see :class:`ResumeCheckpoint`) is what an interrupted run
    continues from.
    """
    from zoo.callbacks.resume_checkpoint import ResumeCheckpoint
    from zoo.callbacks.run_model_checkpoint import RunModelCheckpoint

    directory = run_dir / "checkpoints"
    callbacks = []
    if monitor:
        callbacks.append(RunModelCheckpoint(dirpath=directory, filename="best-epoch{epoch:03d}", monitor=monitor, mode=mode,
                                            save_top_k=1, auto_insert_metric_name=False))
    callbacks.append(RunModelCheckpoint(dirpath=directory, filename="epoch{epoch:03d}", save_top_k=-1, every_n_epochs=1,
                                        auto_insert_metric_name=False))
    from zoo.callbacks.graceful_stop import GracefulStop

    resume = ResumeCheckpoint(directory / "last.ckpt", every_n_train_steps)
    callbacks += [resume, GracefulStop(resume)]
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

    from zoo.callbacks.run_model_checkpoint import own_checkpoint

    if not own_checkpoint(str(path), str(Path(run_dir) / "checkpoints")):
        raise UnsafeDestinationError(f"refusing to load checkpoint {str(path)!r}: it is not a checkpoint file in "
                                     f"{str(Path(run_dir) / 'checkpoints')!r}")
    return torch.load(Path(path).resolve(), map_location="cpu", weights_only=True)


def fit_resuming(trainer: L.Trainer, model, datamodule, run_dir: Path) -> None:
    """``trainer.fit`` resuming from the run's ``last.ckpt`` (loaded ``weights_only``); a
    checkpoint from a different configuration is refused in one line, not a size-mismatch
    traceback; a loss or weight gone inf or nan ends the run in one line, before any export
    (:class:`zoo.callbacks.finite_training.FiniteTraining`, which :func:`make_trainer` adds). A
    fit a signal stopped ends in :class:`zoo.callbacks.graceful_stop.StoppedOnRequest`: exit code
    128 + the signal's number (143 for SIGTERM, 130 for Ctrl-C), its message logged first."""
    from zoo.callbacks.finite_training import NonFiniteTrainingError
    from zoo.callbacks.graceful_stop import GracefulStop
    from zoo.callbacks.run_model_checkpoint import CheckpointStateError
    from lightning.fabric.utilities.exceptions import MisconfigurationException

    from zoo.checkpoint_io import CheckpointWriteError

    ckpt = resume_path(run_dir)
    stopped = f"stopped on request; {run_dir}/checkpoints/last.ckpt holds the run, the same command resumes it"
    try:
        trainer.fit(model, datamodule=datamodule, ckpt_path=ckpt, weights_only=True)
    except (CheckpointWriteError, CheckpointStateError, NonFiniteTrainingError) as error:
        raise SystemExit(str(error)) from None  # e.g. a full disk, a crafted last.ckpt, a diverged run: one line
    except SystemExit:  # Lightning ends a SIGTERMed fit with SIGTERMException (a SystemExit, code 0)
        if GracefulStop.requested_on(trainer):
            raise stopped_on_request(trainer, stopped) from None  # non-zero: a pipeline of recipes stops here
        raise
    except MisconfigurationException as error:
        if ckpt and "restored a checkpoint with current_epoch" in str(error):  # max_epochs below the run's epochs
            raise SystemExit(f"{ckpt} has trained past trainer.max_epochs={trainer.max_epochs}: "
                             f"{str(error).split('current_epoch=')[1].split(',')[0]} epochs are done; "
                             f"give at least that many to finish the run") from None
        raise
    except RuntimeError as error:
        if ckpt and ("size mismatch" in str(error) or "Missing key" in str(error) or "Unexpected key" in str(error)):
            raise SystemExit(f"cannot resume {ckpt}: it was trained with a different model or data configuration "
                             f"(e.g. another vocabulary); use a new run_dir, or the run's config.yaml") from None
        raise
    if GracefulStop.requested_on(trainer):
        # stopped by a signal (Ctrl-C ends the fit normally): no export of a half-trained model
        raise stopped_on_request(trainer, stopped)


def stopped_on_request(trainer: L.Trainer, message: str) -> SystemExit:
    """The exit of a fit a signal stopped: ``message`` logged (an exit code alone prints nothing),
    the code 128 + the signal's number."""
    from zoo.callbacks.graceful_stop import GracefulStop, StoppedOnRequest

    logging.getLogger("zoo.stop").warning(message)
    return StoppedOnRequest(message, GracefulStop.signal_on(trainer))


def make_trainer(config: DictConfig, run_dir: Path, callbacks: list, logger, stage: str = "the run") -> L.Trainer:
    """A Trainer from the recipe's ``trainer`` section; progress goes to a progress bar when
    stdout, where Lightning draws it, is a terminal, and as lines to the log (stderr) otherwise
    or when the log is a file (background runs, ``> train.log``); no layer table
    unless ``--verbose`` (or ``trainer.enable_model_summary=true``); the training curve logged at
    least once an epoch (:class:`zoo.callbacks.logging_interval.EpochLoggingInterval`); each validation's metrics
    appended to ``run_dir/metrics.jsonl``; checkpoints written whole or not at all
    (:class:`zoo.checkpoint_io.AtomicCheckpointIO`) and only of finite weights, the fit stopped
    at the first inf or nan loss (:class:`zoo.callbacks.finite_training.FiniteTraining`); a fit
    that resumes ``stage`` says where it stopped (:class:`zoo.callbacks.resumed_stage.ResumedStage`)."""
    from zoo.callbacks.epoch_metrics import EpochMetricsFile
    from zoo.callbacks.final_validation import ValidateAtMaxSteps
    from zoo.callbacks.finite_training import FiniteTraining
    from zoo.callbacks.logging_interval import EpochLoggingInterval
    from zoo.callbacks.fit_progress import ProgressLog
    from zoo.callbacks.resumed_stage import ResumedStage
    from zoo.checkpoint_io import AtomicCheckpointIO

    from zoo import run_logging

    options = OmegaConf.to_container(config, resolve=True)
    if not run_logging.verbose_output:
        options.setdefault("enable_model_summary", False)  # a table of layers before every run
    if logger is not False:
        callbacks = [*callbacks, LearningRateMonitor()]
    bar = sys.stdout.isatty()  # Lightning's bar is drawn on stdout: redrawn into a file it leaves blank lines
    callbacks = [*callbacks, ValidateAtMaxSteps(), ResumedStage(stage), EpochLoggingInterval(),
                 ProgressLog(lines=not (bar and sys.stderr.isatty())),  # a bar on the log's own terminal says it all
                 EpochMetricsFile(run_dir),  # curves and tables without W&B: run_dir/metrics.jsonl
                 FiniteTraining(run_dir)]
    if not bar:  # plain lines in a log file, not a bar redrawn in it
        options.setdefault("enable_progress_bar", False)
    options["plugins"] = [*(options.get("plugins") or []), AtomicCheckpointIO()]
    return L.Trainer(default_root_dir=str(run_dir), callbacks=callbacks, logger=logger, **options)
