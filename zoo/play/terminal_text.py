"""Lines from a person at a terminal or from a ``--script`` file, made safe to act on, and
text made safe to show.

Whatever arrives (an empty line, a paste of 10,000 characters, invalid UTF-8, control or
zero-width characters, right-to-left marks) becomes a tidy line of printable text or an
empty one; the games never see raw input. Script lines are echoed after the prompt, so a
scripted game reads on screen like a played one; lines starting with ``#`` are comments.

What the games print comes from the data (a room, a Blocks instruction, a corpus line) and
from the command line (a model's name, a folder); :class:`ShownOutput` writes it with every
control character escaped as visible text (``\x1b``), so an escape sequence in the data
cannot set the window title, clear the screen or write the clipboard.
"""

from __future__ import annotations

import sys
import unicodedata
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, TextIO

MAX_LINE_CHARACTERS = 500
"""Longer lines are cut here (with a note): a LIGHT utterance averages 12 tokens, and the
models read at most 256 tokens of context anyway."""

_DROPPED_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn"}
"""Control, format (zero-width, bidi marks), surrogate (undecodable bytes), private-use and
unassigned code points. The zero-width joiner of emoji sequences is kept."""
_KEPT = {"\u200d"}
_ESCAPED_CATEGORIES = {"Cc", "Cf", "Cs"}
"""What a terminal obeys or shows otherwise than written: controls (ESC opens the sequences that
set the title, clear the screen or write the clipboard; BEL closes some), format marks (a bidi
override reorders the line) and undecodable bytes."""


def clean_line(text: str, limit: int = MAX_LINE_CHARACTERS) -> tuple[str, str | None]:
    """``(line, note)``: NFC-normalised printable text with whitespace collapsed, at most
    ``limit`` characters; ``note`` says what was changed, or is None."""
    normalised = unicodedata.normalize("NFC", text)
    kept = "".join(c if c in _KEPT or unicodedata.category(c) not in _DROPPED_CATEGORIES else " "
                   for c in normalised.replace("\t", " "))
    line = " ".join(kept.split())
    notes = []
    if len(line.replace(" ", "")) < len(" ".join(normalised.split()).replace(" ", "")):
        notes.append("unprintable characters removed")
    if len(line) > limit:
        line = line[:limit].rstrip()
        notes.append(f"cut to {limit} characters")
    return line, ("; ".join(notes) or None)


def shown(text: str) -> str:
    """``text`` as a terminal should print it: the characters of :data:`_ESCAPED_CATEGORIES`
    (the newline and the emoji joiner aside) written as their escapes (``\\x1b``, ``\\u202e``),
    so they are read, not obeyed."""
    if text.isprintable():
        return text
    return "".join(c if c == "\n" or c in _KEPT or unicodedata.category(c) not in _ESCAPED_CATEGORIES
                   else c.encode("unicode_escape").decode("ascii") for c in text)


class ShownOutput:
    """A text stream writing through :func:`shown` to ``stream``: the games print through one,
    so whatever text a line is composed of, none of it reaches the terminal raw."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        return self.stream.write(shown(text))

    def flush(self) -> None:
        self.stream.flush()

    def __getattr__(self, name: str):
        return getattr(self.stream, name)


def _decoded(stream: BinaryIO) -> Iterator[str]:
    """A byte stream's lines as text (bad bytes replaced), read one at a time."""
    for data in stream:
        yield data.decode("utf-8", errors="replace").rstrip("\r\n")


class LineSource:
    """The lines of a game: from ``script`` when given (a file, a pipe, or ``-`` for standard
    input, read a line at a time as the game goes), else typed at ``prompt``. Iteration ends
    at the end of the script, at end of input (Ctrl-D) or on Ctrl-C."""

    def __init__(self, script: str | Path | None, prompt: str, out: TextIO) -> None:
        self.prompt, self.out = prompt, out
        self.stdin = str(script) == "-"
        self.script: list[str] | Path | None = None
        if script is not None and not self.stdin:
            path = Path(script)
            if not path.exists() or path.is_dir():
                raise FileNotFoundError(f"script {str(script)!r} is not a file or a pipe (use - for standard input)")
            # a file is read now; a pipe as the game goes (its writer may still be writing)
            self.script = path.read_text(encoding="utf-8", errors="replace").splitlines() if path.is_file() else path

    def __iter__(self) -> Iterator[tuple[str, str | None]]:
        if self.stdin:
            binary = getattr(sys.stdin, "buffer", None)
            return self._scripted(_decoded(binary) if binary else (line.rstrip("\r\n") for line in sys.stdin))
        if isinstance(self.script, Path):
            return self._piped(self.script)
        return self._scripted(self.script) if self.script is not None else self._typed()

    def _piped(self, path: Path) -> Iterator[tuple[str, str | None]]:
        with path.open("rb") as stream:
            yield from self._scripted(_decoded(stream))

    def _scripted(self, lines: Iterable[str]) -> Iterator[tuple[str, str | None]]:
        for raw in lines:
            if raw.lstrip().startswith("#"):
                continue
            line, note = clean_line(raw)
            self.out.write(f"{self.prompt}{line}\n")
            self.out.flush()
            yield line, note

    def _typed(self) -> Iterator[tuple[str, str | None]]:
        if hasattr(sys.stdin, "reconfigure"):
            sys.stdin.reconfigure(errors="surrogateescape")  # bad bytes become removable code points
        while True:
            try:
                raw = input(self.prompt)
            except EOFError:
                self.out.write("\n")
                return
            except KeyboardInterrupt:
                self.out.write("\n")
                return
            yield clean_line(raw)
