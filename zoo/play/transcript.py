"""``--transcript OUT.jsonl``: every turn of a game as one JSON object per line.

Each record has ``turn`` (0 for the game's start record), ``speaker``, ``kind``, ``text``,
``changes`` (what the turn changed in the world, in words) and ``seconds`` (how long the
decision took), plus what the kind adds (an action's ``why``, a move list, an error). The
file is written as the game goes into a temporary sibling and moved into place when the game
ends, however it ends: a reader never sees half a line.

A path that already exists is never written over: it is refused before the game starts
(:func:`check_transcript_path`), and should one appear while the game runs, the game is kept
in a file beside it rather than replacing it. With ``--append`` the game's records are added
to the end of the file instead, in one write when the game ends.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from zoo.errors import UnsafeDestinationError


def check_transcript_path(path: str | os.PathLike, append: bool = False) -> Path:
    """Raise (one line) unless a game may be recorded at ``path``: a new name, or with
    ``append`` a regular file (a link is not followed) or a new name."""
    path = Path(path)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return path
    if stat.S_ISDIR(mode):
        raise ValueError(f"--transcript {str(path)!r} is a directory; name a .jsonl file")
    if not append:
        raise UnsafeDestinationError(f"refusing to write over {str(path)!r}: it exists; name a new file, "
                                     "or pass --append to add this game to its end")
    if not stat.S_ISREG(mode):
        raise UnsafeDestinationError(f"refusing to append to {str(path)!r}: it is not a regular file")
    return path


def _append(path: Path, data: bytes) -> None:
    """Add ``data`` to the end of ``path`` in one write, on a line of its own."""
    descriptor = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o666)
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise UnsafeDestinationError("it is not a regular file")
        size = os.fstat(descriptor).st_size
        if size and os.pread(descriptor, 1, size - 1) != b"\n":
            data = b"\n" + data  # the file's last line is unfinished: ours start on a fresh one
        view = memoryview(data)
        while view:
            view = view[os.write(descriptor, view):]
    finally:
        os.close(descriptor)


class Transcript:
    """A JSONL transcript, or nothing when ``path`` is None. Use as a context manager.
    ``append`` adds the game to an existing file; without it an existing file is refused."""

    def __init__(self, path: str | os.PathLike | None, append: bool = False) -> None:
        self.path = Path(path) if path is not None else None
        self.append = append
        self.records: list[dict[str, Any]] = []
        self._stream = None
        self._temporary: str | None = None
        if self.path is not None:
            check_transcript_path(self.path, append)
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
        from zoo.safe_writes import honour_umask, place_new

        temporary = Path(self._temporary)
        if self.append:
            try:
                _append(self.path, temporary.read_bytes())
            except (OSError, UnsafeDestinationError) as error:  # a link or a pipe swapped in, a full disk: the game is kept
                raise UnsafeDestinationError(f"could not append to {str(self.path)!r} ({_reason(error)}); the "
                                             f"transcript is in {str(_keep_beside(temporary))!r}") from None
            temporary.unlink()
            return
        honour_umask(temporary, directory=False)
        try:
            place_new(temporary, self.path)
        except FileExistsError:  # it appeared during the game: keep both, the game beside it
            raise UnsafeDestinationError(f"refusing to write over {str(self.path)!r}: it appeared during the "
                                         f"game; the transcript is in {str(_keep_beside(temporary))!r}") from None

    def __enter__(self) -> "Transcript":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _keep_beside(temporary: Path) -> Path:
    """Give a game that could not go where it was asked a visible name of its own."""
    kept = temporary.with_name(temporary.name.lstrip(".").removesuffix(".tmp") + ".jsonl")
    os.replace(temporary, kept)
    return kept


def _reason(error: Exception) -> str:
    return (error.strerror if isinstance(error, OSError) else None) or str(error)
