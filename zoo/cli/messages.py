"""Library errors told in the command line's words.

The library's messages name its Python arguments (``pass data_dir=``, ``download=True``) for
callers of the API; at the command line the same advice is a flag or an environment
variable. The CLI prints every error through :func:`cli_words`, so the library keeps
speaking Python and the command speaks flags."""

from __future__ import annotations

import re

TRANSLATIONS = (
    (r"pass download=True \(--download\)", "pass --download"),
    (r"pass download=True", "pass --download"),
    (r"pass data_dir=(?!\w)", "pass --data-dir"),
    (r"pass verify=False", "pass --no-verify"),
    (r"(?<![$\w])ZOO_DATA_DIR\b", "$ZOO_DATA_DIR"),
    (r"(?<![$\w])ZOO_CACHE\b", "$ZOO_CACHE"),
)
"""(pattern, replacement): Python API words in library messages, and the CLI's for them."""


def cli_words(error: BaseException | str) -> str:
    """The message of ``error`` with the library's API advice put as flags."""
    message = error.args[0] if isinstance(error, KeyError) and error.args else str(error)
    for pattern, replacement in TRANSLATIONS:
        message = re.sub(pattern, replacement, message)
    return message


def command_failed(command: str, error: BaseException) -> int:
    """Print ``zoo COMMAND: error: ...`` (in the command line's words) on stderr; the exit status, 2."""
    import sys

    print(f"zoo {command}: error: {cli_words(error)}", file=sys.stderr)
    return 2
