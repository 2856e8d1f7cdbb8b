"""The project's own exceptions: every mistake in what a user gave zoo ends in one of these
(or in a standard ``ValueError``/``FileNotFoundError`` with a one-line message), never in a
traceback from deep inside a library."""

from __future__ import annotations


class ZooError(Exception):
    """Base of zoo's exceptions; the CLI prints its message on one line."""


class UnsafeDestinationError(ZooError, ValueError):
    """An output path zoo refuses to replace, because replacing it could destroy data zoo
    did not write (a user's directory, the working directory, a home directory, ``/``)."""
