"""Pick the Blocks data to use: the real release when present, else procedural boards."""

from __future__ import annotations

import logging
import os

from zoo.blocks.data import load_split
from zoo.blocks.records import BlocksSplit

log = logging.getLogger(__name__)


def open_split(
    split: str,
    data_dir: str | os.PathLike | None = None,
    download: bool = False,
    procedural_fallback: bool = True,
) -> tuple[BlocksSplit, str]:
    """``(split, source)`` where source is ``"real"`` or ``"procedural"``.

    The real data is used whenever it can be found (``data_dir``, ``$ZOO_DATA_DIR/blocks``,
    the cache, or a download when allowed). Otherwise, if allowed, procedural boards stand in
    so that every command runs on a fresh machine; results on them are labelled as such.
    """
    try:
        return load_split(split, data_dir, download), "real"
    except FileNotFoundError as missing:
        if data_dir is not None or not procedural_fallback:
            raise
        from zoo.blocks.procedural import procedural_split

        log.warning("%s Using procedural boards instead (not comparable to the paper).", missing)
        return procedural_split(split), "procedural"
