"""Writing directories so that nothing half-written is ever left where a reader looks."""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


@contextmanager
def replace_directory(directory: str | os.PathLike) -> Iterator[Path]:
    """Yield an empty staging directory beside ``directory``; when the block succeeds, it
    replaces ``directory`` in one rename. On any error the staging copy is removed and the
    old ``directory`` (if any) is left as it was."""
    directory = Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", dir=directory.parent))
    try:
        yield staging
        if directory.exists():
            shutil.rmtree(directory)
        os.replace(staging, directory)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
