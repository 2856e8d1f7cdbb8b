"""``--transcript OUT.jsonl``: every turn of a game as one JSON object per line.

Each record has ``turn`` (0 for the game's start record), ``speaker``, ``kind``, ``text``,
``changes`` (what the turn changed in the world, in words) and ``seconds`` (how long the
decision took), plus what the kind adds (an action's ``why``, a move list, an error). The
file is written as the game goes into a temporary sibling and renamed into place when the
game ends, however it ends: a reader never sees half a line, and a file that already exists
is only replaced by a whole transcript.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


class Transcript:
    """A JSONL transcript, or nothing when ``path`` is None. Use as a context manager."""

    def __init__(self, path: str | os.PathLike | None) -> None:
        self.path = Path(path) if path is not None else None
        self.records: list[dict[str, Any]] = []
        self._stream = None
        self._temporary: str | None = None
        if self.path is not None:
            if self.path.is_dir():
                raise ValueError(f"--transcript {str(path)!r} is a directory; name a .jsonl file")
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle, self._temporary = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp",
                                                       dir=self.path.parent)
            self._stream = os.fdopen(handle, "w", encoding="utf-8")

    def write(self, turn: int, speaker: str, kind: str, text: str | None, changes: list[str] | None = None,
              seconds: float | None = None, **extra: Any) -> dict[str, Any]:
        record = {"turn": turn, "speaker": speaker, "kind": kind, "text": text, "changes": list(changes or []),
                  "seconds": None if seconds is None else round(float(seconds), 4), **extra}
        self.records.append(record)
        if self._stream is not None:
            self._stream.write(json.dumps(record, ensure_ascii=False) + "\n")
            self._stream.flush()
        return record

    def close(self) -> None:
        if self._stream is None:
            return
        self._stream.close()
        self._stream = None
        from zoo.files import honour_umask

        honour_umask(Path(self._temporary), directory=False)
        os.replace(self._temporary, self.path)

    def __enter__(self) -> "Transcript":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
