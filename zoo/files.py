"""Writing outputs so that nothing half-written is ever left where a reader looks, and
nothing zoo did not write is ever deleted.

Every directory :func:`replace_directory` produces carries a marker file,
:data:`MARKER_NAME`. An existing directory is replaced only when it carries that marker
(zoo wrote it before) or is empty; anything else, and the working directory, a home
directory or a filesystem root whatever they hold, is refused with
:class:`~zoo.errors.UnsafeDestinationError` before anything is touched.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Callable, Iterator

from zoo.errors import UnsafeDestinationError

MARKER_NAME = ".zoo-output"
"""File in every directory zoo writes; its presence is what allows zoo to replace it."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def honour_umask(path: Path, directory: bool) -> None:
    """``mkdtemp``/``mkstemp`` create 0700/0600 entries; give outputs the permissions an
    ordinary ``mkdir``/``open`` would (0777/0666 less the umask)."""
    os.chmod(path, (0o777 if directory else 0o666) & ~_umask())


def _protected(path: Path) -> str | None:
    """Why ``path`` may never be replaced, or None."""
    resolved = path.resolve()
    if resolved == Path(resolved.anchor):
        return "it is a filesystem root"
    home = Path.home().resolve()
    if resolved == home:
        return "it is a home directory"
    cwd = Path.cwd().resolve()
    if resolved == cwd or resolved in cwd.parents:
        return "it is the working directory or one of its parents"
    return None


def _empty_or_marked(directory: Path) -> bool:
    """Whether ``directory`` is empty or carries the marker, judged from one listing: looking
    up the marker and then listing would be two looks, and another writer's swap between them
    (the old directory renamed away, the new one renamed in) made a zoo directory look foreign."""
    with os.scandir(directory) as entries:
        names = {entry.name: entry for entry in entries}
    marker = names.get(MARKER_NAME)
    return not names or (marker is not None and marker.is_file(follow_symlinks=False))


def check_replaceable(directory: str | os.PathLike) -> Path:
    """Raise :class:`UnsafeDestinationError` unless ``directory`` may be replaced by zoo
    output: it does not exist, or it is a directory that is empty or carries zoo's marker."""
    directory = Path(directory).expanduser()
    reason = _protected(directory)
    if reason is None:
        try:
            # One look at what the name is (a link is not followed): asking "exists?" then "a
            # directory?" let another writer's swap fall between the two, and a zoo directory
            # renamed away for an instant read as "exists and is not a directory".
            mode = os.lstat(directory).st_mode
            if not stat.S_ISDIR(mode):
                reason = "it exists and is not a directory"
            elif not _empty_or_marked(directory):
                reason = "it is not empty and zoo did not write it"
        except FileNotFoundError:  # absent, or swapped away by another writer while we looked: nothing to lose
            pass
    if reason:
        raise UnsafeDestinationError(f"refusing to replace {str(directory)!r}: {reason}; choose a new or empty directory")
    return directory


def destination_lock(path: Path):
    """An inter-process lock for ``path``, its lock file kept in zoo's cache (not beside the
    user's output, where it would be a stray file)."""
    import hashlib

    from filelock import FileLock

    from zoo.paths import cache_dir

    locks = cache_dir() / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256(str(Path(path).resolve()).encode()).hexdigest()[:32]
    return FileLock(str(locks / f"{key}.lock"))


STALE_SECONDS = 3600
"""A staging directory untouched for this long belongs to a writer that was killed."""


def remove_stale(leftovers, older_than: float = STALE_SECONDS) -> None:
    """Delete the given staging files or directories (never links) that nothing has written
    to for ``older_than`` seconds: what a killed writer left. Younger ones may be live."""
    import time

    now = time.time()
    for leftover in leftovers:
        try:
            if leftover.is_symlink() or now - leftover.stat().st_mtime <= older_than:
                continue
            if leftover.is_dir():
                shutil.rmtree(leftover, ignore_errors=True)
            else:
                leftover.unlink()
        except FileNotFoundError:
            pass


def remove_stale_staging(directory: Path, older_than: float = STALE_SECONDS) -> None:
    """Delete the staging and set-aside siblings (``.<name>.<random>``) that a killed
    :func:`replace_directory` left beside ``directory``, once they are ``older_than`` seconds old."""
    import re

    ours = re.compile(re.escape(f".{directory.name}.") + r"(old\.)?[a-z0-9_]{8}")  # mkdtemp's names
    remove_stale((p for p in directory.parent.glob(f".{directory.name}.*") if ours.fullmatch(p.name) and p.is_dir()),
                 older_than)


@contextmanager
def replace_directory(directory: str | os.PathLike, kind: str = "output") -> Iterator[Path]:
    """Yield an empty staging directory beside ``directory``; when the block succeeds, the
    staging directory (marked as zoo output) takes ``directory``'s place.

    The swap: the old directory is renamed aside, the new one renamed in, then the old one
    removed, so a reader sees the old or the new contents, never a mix, and a crash in
    between leaves both on disk. On any error the staging copy is removed and the old
    ``directory`` is left as it was. A directory zoo did not write is refused up front
    (:func:`check_replaceable`).
    """
    directory = check_replaceable(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_staging(directory)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", dir=directory.parent))
    aside: Path | None = None
    try:
        honour_umask(staging, directory=True)
        yield staging
        (staging / MARKER_NAME).write_text(json.dumps({"written_by": "zoo", "kind": kind}) + "\n")
        # One swap at a time per destination: concurrent writers (two processes building the
        # same cache entry) take turns, and the last one's output stays, whole.
        with destination_lock(directory):
            check_replaceable(directory)  # again: the block may have run for hours
            if directory.exists():
                aside = Path(tempfile.mkdtemp(prefix=f".{directory.name}.old.", dir=directory.parent))
                os.replace(directory, aside / "previous")
            try:
                os.replace(staging, directory)
            except OSError:
                if aside is not None:
                    os.replace(aside / "previous", directory)
                raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
        if aside is not None and aside.exists():
            shutil.rmtree(aside, ignore_errors=True)


def atomic_write(path: str | os.PathLike, save: Callable[[BinaryIO], None], sync: bool = False) -> Path:
    """Write ``path`` through a temporary sibling that ``save(stream)`` fills, then rename it
    into place: a reader never sees half a file, and a failure leaves nothing behind. The
    file gets the permissions ``open`` would give it (the umask honoured)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            save(stream)
            if sync:
                stream.flush()
                os.fsync(stream.fileno())
        honour_umask(Path(temporary), directory=False)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically (see :func:`atomic_write`)."""
    return atomic_write(path, lambda stream: stream.write(text.encode("utf-8")))
