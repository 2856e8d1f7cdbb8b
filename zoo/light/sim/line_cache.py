"""An append-only on-disk cache of generated lines: what makes LLM speech resumable.

Writing a full LIGHT-sim v2 corpus takes many CPU hours; a run that stops (a crash, a
timeout, a reboot) must not lose what it wrote. Every finished batch of lines is appended to
one JSON-lines file and flushed, one ``{"key": ..., "raw": ...}`` record per line, keyed by
:func:`line_key` (the model's identity, the prompt, the seed). A rerun reads the file and
asks the model only for what is missing. JSON, never pickle: the file is data, safe to read
whoever wrote it. A record cut short by a crash (the last line, unterminated) is ignored.

Several processes may write one corpus's lines at once (``zoo light sim --speech-shard K/N``),
each appending to its own shard file beside the main one (:func:`shard_path`); two processes
never append to one file. A cache reads its own file and, read-only, any others it is given:
a shard also reads the main file (lines a smaller preset already wrote) and the other shards'
files (so a shard stopped halfway can be split finer, 0/2 into 0/4 and 2/4, without writing
its lines again), and the run that writes the corpus reads every shard (:func:`shard_files`).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Iterable, Mapping


def line_key(identity: str, prompt: str, seed: int) -> str:
    """The cache key of one completion: same model and decoding, same prompt, same seed."""
    return hashlib.sha256(f"{identity}\0{seed}\0{prompt}".encode()).hexdigest()


def shard_path(path: str | os.PathLike, index: int, count: int) -> Path:
    """Where shard ``index`` of ``count`` appends its lines: ``lines.jsonl`` → ``lines.shard-1-of-2.jsonl``."""
    path = Path(path)
    return path.with_name(f"{path.stem}.shard-{index}-of-{count}{path.suffix}")


def shard_files(path: str | os.PathLike) -> list[Path]:
    """The shard files written beside ``path``, in name order."""
    path = Path(path)
    return sorted(path.parent.glob(f"{path.stem}.shard-*-of-*{path.suffix}"))


class LineCache:
    """``get``/``put`` completions by key; ``put`` appends to ``path`` at once. ``read_also``:
    other cache files whose lines count as cached (read once, never written); ``read_after``:
    the same, but their lines win over ``path``'s where both hold a key.

    Why an order: two files hold one key with different lines only when two processes wrote it
    at once, each without seeing the other's line (say a shard, and a run on the main file
    started beside it by mistake). The chat went on from the line its own process wrote, so the
    file of the process that finished the chat must win, or every later line of the chat
    misses the cache and is written again: a shard's file over the main one."""

    def __init__(self, path: str | os.PathLike, read_also: Iterable[str | os.PathLike] = (),
                 read_after: Iterable[str | os.PathLike] = ()):
        self.path = Path(path)
        self._lines: dict[str, str] = {}
        self.hits = 0
        others = [Path(other) for other in read_also if Path(other) != self.path]
        for source in [*others, self.path, *(Path(other) for other in read_after if Path(other) != self.path)]:
            if source.is_file():
                self._read(source)

    def _read(self, path: Path) -> None:
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if not line.endswith("\n"):
                    break  # a record a crash cut short
                try:
                    record = json.loads(line)
                    key, raw = record["key"], record["raw"]
                except (json.JSONDecodeError, KeyError, TypeError) as error:
                    raise ValueError(f"{path}:{number}: not a line-cache record ({error})") from None
                if not isinstance(key, str) or not isinstance(raw, str):
                    raise ValueError(f"{path}:{number}: key and raw must be strings")
                self._lines[key] = raw

    def __len__(self) -> int:
        return len(self._lines)

    def __contains__(self, key: str) -> bool:
        return key in self._lines

    def get(self, key: str) -> str | None:
        raw = self._lines.get(key)
        self.hits += raw is not None
        return raw

    def put(self, items: Mapping[str, str] | Iterable[tuple[str, str]]) -> None:
        """Append completions (key, raw) and flush them to disk before returning."""
        pairs = list(items.items() if isinstance(items, Mapping) else items)
        if not pairs:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._drop_torn_tail()
        with self.path.open("a", encoding="utf-8") as handle:
            for key, raw in pairs:
                handle.write(json.dumps({"key": key, "raw": raw}, ensure_ascii=False) + "\n")
                self._lines[key] = raw
            handle.flush()
            os.fsync(handle.fileno())

    def _drop_torn_tail(self) -> None:
        """Cut an unterminated last record (a crash mid-write) so appends start on a fresh line."""
        if not self.path.is_file() or self.path.stat().st_size == 0:
            return
        with self.path.open("rb+") as handle:
            handle.seek(-1, os.SEEK_END)
            if handle.read(1) == b"\n":
                return
            handle.seek(0)
            content = handle.read()
            handle.seek(content.rfind(b"\n") + 1)
            handle.truncate()
