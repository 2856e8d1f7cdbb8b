"""Reading JSON that came from outside, with its nesting bounded.

Python's ``json`` recurses once per nested array or object, so a file of 100,000 ``[``
ends in a ``RecursionError`` (a traceback, not a message). zoo's files nest a handful of
levels (a Blocks episode: list, dict, states, frame, block), so text nested deeper than
:data:`MAX_JSON_DEPTH` is refused in one line before it is parsed. The depth is counted
over the text with strings blanked out, with regular expressions and numpy (C speed: a
multi-megabyte file in milliseconds), never by recursion.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from zoo.errors import ZooError

MAX_JSON_DEPTH = 100
"""Deepest nesting of arrays and objects accepted."""

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_CHUNK = 1 << 22


class JsonError(ZooError, ValueError):
    """A JSON file or text that is malformed or nested too deeply."""


def json_depth(text: str) -> int:
    """The deepest nesting of arrays and objects in ``text`` (brackets inside strings do not count)."""
    import numpy as np

    blanked = _STRING.sub('""', text).encode("utf-8", "surrogatepass")
    codes = np.frombuffer(blanked, dtype=np.uint8)
    deepest, level = 0, 0
    for start in range(0, len(codes), _CHUNK):
        chunk = codes[start:start + _CHUNK]
        steps = ((chunk == ord("[")) | (chunk == ord("{"))).astype(np.int64) \
            - ((chunk == ord("]")) | (chunk == ord("}"))).astype(np.int64)
        if not steps.any():
            continue
        levels = np.cumsum(steps) + level
        deepest, level = max(deepest, int(levels.max())), int(levels[-1])
    return deepest


def loads_json(text: str | bytes, source: str = "<text>", max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` with the nesting bounded; any failure is a one-line :class:`JsonError`
    naming ``source``."""
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as error:
            raise JsonError(f"{source} is not UTF-8 text: {error}") from None
    depth = json_depth(text)
    if depth > max_depth:
        raise JsonError(f"{source} nests {depth} levels deep, more than the {max_depth} zoo reads")
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError, ValueError) as error:
        raise JsonError(f"{source} is not valid JSON: {str(error).splitlines()[0] if str(error) else type(error).__name__}") from None


def read_json(path: str | os.PathLike, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The JSON file at ``path``, read as UTF-8 with the nesting bounded."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise JsonError(f"cannot read {path}: {error.strerror or error}") from None
    return loads_json(data, str(path), max_depth)
