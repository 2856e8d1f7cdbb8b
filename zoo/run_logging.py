"""What a run prints: our progress and results, each warning once on one line, and none of
the libraries' chatter (hardware banners, tips, model summaries, W&B's sync notes) unless
asked for with ``--verbose``.

A researcher reads a run's log for its progress and for what went wrong; twenty lines of
banners before the first progress line, and the same deprecation note four times, hide both.
Under DDP every process writes to the same terminal: each line says which rank wrote it
(``[rank 1] ...``), and ranks other than 0 keep to warnings and errors, so the progress,
estimates and results are printed once.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings

LIBRARY_LOGGERS = ("lightning", "lightning.pytorch", "lightning.fabric", "pytorch_lightning", "transformers",
                   "huggingface_hub", "safetensors", "wandb")

LIBRARY_PACKAGES = ("lightning", "pytorch_lightning", "lightning_fabric", "transformers", "huggingface_hub",
                    "safetensors", "wandb")
"""Packages whose informational log records (below warnings) are chatter in a zoo run, whatever
their logger is called: huggingface_hub's serialization names its loggers by file path
(``Model weights successfully saved to ...``, the shard notice), outside its logger tree."""

EXPECTED_WARNINGS = (
    # Lightning's own internals (lightning/pytorch/utilities/_pytree.py) on torch >= 2.10.
    r".*isinstance\(treespec, LeafSpec\)",
    # Run directories are reused on purpose: that is how runs resume.
    r"Checkpoint directory .* exists and is not empty",
    # Our loaders do resume mid-epoch (zoo.resumable; the interrupted-run tests hold resumed
    # weights identical); Lightning counts optimizer steps, several per bandit batch.
    r"You're resuming from a checkpoint that ended before the epoch ended",
    # A recipe picks its workers from the machine; the note is for hand-written loaders.
    r"The '\w+_dataloader' does not have many workers",
    # A small run (--tiny, data.limit) has fewer batches than trainer.log_every_n_steps: zoo caps the
    # interval at an epoch's batches (zoo.callbacks.logging_interval), so every epoch logs its curve.
    r"The number of training batches \(\d+\) is smaller than the logging interval",
)
"""Messages that say nothing wrong in a zoo run, silenced unless ``--verbose``."""

verbose_output = False
"""Whether :func:`configure_output` was asked for the libraries' output (read by make_trainer)."""


def one_line(message, category, filename, lineno, line=None) -> str:
    """``warning: <message> (<Category>)``: where it was raised is noise to a user."""
    text = " ".join(str(message).split())
    return f"{rank_label()}warning: {text} ({category.__name__})\n"


def process_rank() -> tuple[int, int]:
    """``(rank, world size)`` of this process: torch.distributed's once it is set up, before
    that the launcher's environment (Lightning's and torchrun's ``WORLD_SIZE``, ``RANK``,
    ``LOCAL_RANK``); ``(0, 1)`` for a single process."""
    distributed = sys.modules.get("torch.distributed")
    if distributed is not None and distributed.is_available() and distributed.is_initialized():
        return distributed.get_rank(), distributed.get_world_size()
    try:
        world = int(os.environ.get("WORLD_SIZE", "1"))
        rank = int(os.environ.get("RANK", os.environ.get("LOCAL_RANK", "0")))
    except ValueError:
        return 0, 1
    return (rank, world) if world > 1 else (0, 1)


def rank_label() -> str:
    """``"[rank N] "`` in a process of a multi-process run, else nothing."""
    rank, world = process_rank()
    return f"[rank {rank}] " if world > 1 else ""


class QuietOutside(logging.Filter):
    """Drops a record below warnings when it is library chatter (logged from inside one of
    :data:`LIBRARY_PACKAGES`, while ``drop_libraries``) or comes from a rank other than 0
    (rank 0 says it once)."""

    def __init__(self) -> None:
        super().__init__()
        self.drop_libraries = False
        self.directories = tuple(filter(None, map(package_directory, LIBRARY_PACKAGES)))

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            return True
        if process_rank()[0] != 0:
            return False
        return not (self.drop_libraries and record.pathname.startswith(self.directories))


class RankLabelledRecords:
    """A log record factory that starts every message with :func:`rank_label` and puts
    ``quiet`` on every handler the record will reach, so the rules hold for whichever
    handler writes it: Lightning's, a library's own, a test's, one made after
    :func:`configure_output`."""

    def __init__(self, factory, quiet: QuietOutside):
        self.factory, self.quiet = factory, quiet

    def __call__(self, name, *args, **kwargs) -> logging.LogRecord:
        record = self.factory(name, *args, **kwargs)
        label = rank_label()
        if label:
            record.msg = label + str(record.msg)  # the label has no %: the record's args still fit
        self._watch(logging.getLogger(name) if name != "root" else logging.getLogger())
        return record

    def _watch(self, logger: logging.Logger | None) -> None:
        handlers = [logging.lastResort]
        while logger is not None:
            handlers += logger.handlers
            logger = logger.parent if logger.propagate else None
        for handler in handlers:
            if handler is not None and self.quiet not in handler.filters:
                handler.addFilter(self.quiet)


def package_directory(name: str) -> str | None:
    """Where an installed package's files lie (with a trailing separator), without importing it."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(list(spec.submodule_search_locations)[0], "")


def silence_progress_bars() -> None:
    """huggingface_hub's and transformers' download and load bars off, whether or not they
    are imported yet (each reads its switch once, at import)."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # transformers' bars follow this too
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    if "transformers" in sys.modules:
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()


def configure_output(verbose: bool = False) -> None:
    """Every warning at most once, on one line; every line labelled with its rank under DDP,
    and only warnings and errors from ranks other than 0. With ``verbose`` False, third-party
    logging below warnings (transformers', huggingface_hub's, safetensors', Lightning's
    notices), their progress bars and the warnings in :data:`EXPECTED_WARNINGS` are off;
    their warnings stay.

    The rules ride on every log record made from then on (:class:`RankLabelledRecords`),
    so they hold for handlers set up later too."""
    global verbose_output
    verbose_output = verbose
    warnings.formatwarning = one_line
    warnings.simplefilter("once")
    factory = logging.getLogRecordFactory()
    if not isinstance(factory, RankLabelledRecords):
        factory = RankLabelledRecords(factory, QuietOutside())
        logging.setLogRecordFactory(factory)
    factory.quiet.drop_libraries = not verbose
    if verbose:
        return
    silence_progress_bars()
    for pattern in EXPECTED_WARNINGS:
        warnings.filterwarnings("ignore", message=pattern)
    for name in LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    os.environ.setdefault("WANDB_SILENT", "true")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "warning")  # its warnings (weights not loaded) matter
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if not sys.stderr.isatty():  # a bar redrawn into a log file is one unreadable line per redraw
        os.environ.setdefault("TQDM_DISABLE", "1")  # and the bars libraries draw with plain tqdm (the GGUF loader's)
