"""What a run prints: our progress and results, each warning once on one line, and none of
the libraries' chatter (hardware banners, tips, model summaries, W&B's sync notes) unless
asked for with ``--verbose``.

A researcher reads a run's log for its progress and for what went wrong; twenty lines of
banners before the first progress line, and the same deprecation note four times, hide both.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings

LIBRARY_LOGGERS = ("lightning", "lightning.pytorch", "lightning.fabric", "pytorch_lightning", "transformers",
                   "huggingface_hub", "wandb")

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
)
"""Messages that say nothing wrong in a zoo run, silenced unless ``--verbose``."""

verbose_output = False
"""Whether :func:`configure_output` was asked for the libraries' output (read by make_trainer)."""


def one_line(message, category, filename, lineno, line=None) -> str:
    """``warning: <message> (<Category>)``: where it was raised is noise to a user."""
    text = " ".join(str(message).split())
    return f"warning: {text} ({category.__name__})\n"


def configure_output(verbose: bool = False) -> None:
    """Every warning at most once, on one line; with ``verbose`` False, third-party logging
    below warnings and the warnings in :data:`EXPECTED_WARNINGS` are off."""
    global verbose_output
    verbose_output = verbose
    warnings.formatwarning = one_line
    warnings.simplefilter("once")
    if verbose:
        return
    for pattern in EXPECTED_WARNINGS:
        warnings.filterwarnings("ignore", message=pattern)
    for name in LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    os.environ.setdefault("WANDB_SILENT", "true")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if not sys.stderr.isatty():  # a bar redrawn into a log file is one unreadable line per redraw
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # transformers' bars follow this too
        os.environ.setdefault("TQDM_DISABLE", "1")  # and the bars libraries draw with plain tqdm (the GGUF loader's)
