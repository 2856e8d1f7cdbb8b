"""Argument types and options that several ``zoo`` commands share."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """argparse type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def add_threads_argument(parser: argparse.ArgumentParser, work: str) -> None:
    """``--threads N`` on a command whose work is ``work`` (``small`` or ``large``, see
    :mod:`zoo.threads`); ``zoo.cli.main`` gives torch the chosen count before the command runs
    and says which on stderr."""
    default = "1, for small operations" if work == "small" else "the idle cores"
    parser.add_argument("--threads", type=positive_int, default=None,
                        help=f"torch CPU threads (default: {default}; an OMP_NUM_THREADS setting is kept)")
    parser.set_defaults(work=work)
