"""Where data and downloads live: ``$ZOO_DATA_DIR`` for datasets, ``$ZOO_CACHE`` for downloads."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """Download cache: ``$ZOO_CACHE``, else ``~/.cache/zoo``."""
    return Path(os.environ.get("ZOO_CACHE") or Path.home() / ".cache" / "zoo").expanduser()


def data_root() -> Path | None:
    """Root of local datasets (``$ZOO_DATA_DIR``), or None when unset."""
    root = os.environ.get("ZOO_DATA_DIR")
    return Path(root).expanduser() if root else None


def domain_data_dir(domain: str, override: str | os.PathLike | None = None) -> Path | None:
    """The directory holding ``domain``'s files: the caller's ``override``, else
    ``$ZOO_DATA_DIR/<domain>``; None when neither names an existing directory."""
    if override is not None:
        path = Path(override).expanduser()
        if not path.is_dir():
            raise FileNotFoundError(f"data directory {path} does not exist")
        return path
    root = data_root()
    if root is not None and (root / domain).is_dir():
        return root / domain
    return None
