"""Writing outputs so that nothing half-written is ever left where a reader looks, and
nothing zoo did not write is ever deleted or overwritten.

One rule for every output path (a run directory, ``--out``, ``--save``): zoo writes into a
new path, an empty directory, or a directory it marked for the same kind of output. Every
directory zoo writes carries a marker file, :data:`MARKER_NAME`, recording its kind (one of
:data:`OUTPUT_KINDS`). Anything else is refused with
:class:`~zoo.errors.UnsafeDestinationError` before anything is touched: a directory zoo did
not write, one it marked for another kind (a corpus is never written over a trained model),
a file, a link, and the working directory, a home directory or a filesystem root whatever
they hold.

A marker that records no kind of this list (none, another name, an unreadable file) marks
nothing: its directory is refused like any other zoo did not write, unless it holds nothing
but the marker.
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
"""File in every directory zoo writes; its presence (and the kind it records) is what allows
zoo to write there again."""

OUTPUT_KINDS = {
    "run": "a training run",
    "stage": "a stage of a training run",
    "model": "a trained model",
    "corpus": "a corpus",
    "gifs": "Blocks GIFs",
    "retrieval-index": "a retrieval index",
}
"""Every kind of directory zoo writes, and how an error message names what one holds."""

_MARKER_MAX_BYTES = 4096


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


def _listing(directory: Path) -> dict[str, os.DirEntry]:
    """One listing of ``directory``: looking up the marker and then listing would be two
    looks, and another writer's swap between them (the old directory renamed away, the new
    one renamed in) made a zoo directory look foreign."""
    with os.scandir(directory) as entries:
        return {entry.name: entry for entry in entries}


def _read_marker(directory: Path) -> str | None:
    """The kind of :data:`OUTPUT_KINDS` the marker in ``directory`` records, or None (none, another
    name, unreadable, gone). The marker is opened without following a link or waiting on a pipe, and read bounded."""
    try:
        descriptor = os.open(directory / MARKER_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return None
        raw = os.read(descriptor, _MARKER_MAX_BYTES)
    finally:
        os.close(descriptor)
    try:
        kind = json.loads(raw.decode("utf-8")).get("kind")
    except (ValueError, AttributeError):
        return None
    return kind if isinstance(kind, str) and kind in OUTPUT_KINDS else None


def _marker_temporary(name: str) -> bool:
    """Whether ``name`` is what a :func:`write_marker` killed mid-write left behind
    (:func:`atomic_write`'s temporary: ``.<name>.<random>.tmp``)."""
    return name.startswith(f".{MARKER_NAME}.") and name.endswith(".tmp")


def _contents(names) -> set[str]:
    """The names in a listing that are output: neither the marker nor a marker temporary."""
    return {name for name in names if name != MARKER_NAME and not _marker_temporary(name)}


def output_kind(directory: str | os.PathLike) -> str | None:
    """The kind of zoo output ``directory`` holds (see :data:`OUTPUT_KINDS`), or None when it
    carries no marker recording one."""
    directory = Path(directory)
    try:
        marker = _listing(directory).get(MARKER_NAME)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if marker is None or not marker.is_file(follow_symlinks=False):
        return None
    return _read_marker(directory)


def _why_not(directory: Path, kind: str) -> str | None:
    """Why zoo may not write output of ``kind`` into the existing directory, or None."""
    names = _listing(directory)
    contents = _contents(names)
    marker = names.get(MARKER_NAME)
    regular = marker is not None and marker.is_file(follow_symlinks=False)
    recorded = _read_marker(directory) if regular else None
    if recorded is None:
        # empty, holding only what a write_marker killed mid-write left, or only a marker that marks
        # nothing: nothing of anyone's
        return "it is not empty and zoo did not write it" if contents or marker is not None and not regular else None
    if recorded == kind:
        return None
    return f"it holds {OUTPUT_KINDS[recorded]}, not {OUTPUT_KINDS[kind]}"


def _known(kind: str) -> str:
    if kind not in OUTPUT_KINDS:
        raise ValueError(f"unknown output kind {kind!r}; one of {', '.join(OUTPUT_KINDS)}")
    return kind


def _not_writable(path: Path) -> str | None:
    """Why zoo could not write ``path`` (a read-only filesystem or folder), or None: told before
    the work whose output it is, not after."""
    existing = next((folder for folder in (path, *path.absolute().parents) if folder.exists()), None)
    if existing is None or os.access(existing, os.W_OK | os.X_OK):
        return None
    return "it is not writable" if existing == path else f"{str(existing)!r} is not writable"


def check_replaceable(directory: str | os.PathLike, *, kind: str) -> Path:
    """Raise :class:`UnsafeDestinationError` (one line) unless zoo may write output of
    ``kind`` (one of :data:`OUTPUT_KINDS`) at ``directory``: it does not exist, or it is a
    directory that is empty or that zoo marked for the same kind."""
    _known(kind)
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
            else:
                reason = _why_not(directory, kind)
        except FileNotFoundError:  # absent, or swapped away by another writer while we looked: nothing to lose
            pass
    if reason is None:
        reason = _not_writable(directory)
    if reason:
        raise UnsafeDestinationError(f"refusing to write {OUTPUT_KINDS[kind]} to {str(directory)!r}: {reason}; "
                                     "choose a new or empty directory")
    return directory


def write_marker(directory: str | os.PathLike, *, kind: str, **record) -> Path:
    """Mark ``directory`` as zoo's output of ``kind``. Written through a temporary sibling and
    renamed, so a kill mid-write never leaves a half marker (which would read as kind-less).
    ``record`` is kept with the kind (e.g. the configuration hash of the run that wrote it)."""
    return atomic_write_text(Path(directory) / MARKER_NAME,
                             json.dumps({"written_by": "zoo", "kind": _known(kind), **record}) + "\n")


def marker_record(directory: str | os.PathLike) -> dict:
    """Everything ``directory``'s marker records (``kind``, and what :func:`write_marker` was
    given); {} when it has none or it is not a JSON object. Read like the kind: no link
    followed, no wait on a pipe, bounded."""
    try:
        descriptor = os.open(Path(directory) / MARKER_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return {}
    try:
        raw = os.read(descriptor, _MARKER_MAX_BYTES) if stat.S_ISREG(os.fstat(descriptor).st_mode) else b""
    finally:
        os.close(descriptor)
    try:
        record = json.loads(raw.decode("utf-8"))
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


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
def replace_directory(directory: str | os.PathLike, *, kind: str, record: dict | None = None) -> Iterator[Path]:
    """Yield an empty staging directory beside ``directory``; when the block succeeds, the
    staging directory (marked as zoo output of ``kind``) takes ``directory``'s place.

    The swap: the old directory is renamed aside, the new one renamed in, then the old one
    removed, so a reader sees the old or the new contents, never a mix, and a crash in
    between leaves both on disk. On any error the staging copy is removed and the old
    ``directory`` is left as it was. A directory zoo did not write, or wrote for another
    kind, is refused up front (:func:`check_replaceable`). ``record`` is kept in the marker
    (:func:`write_marker`).
    """
    directory = check_replaceable(directory, kind=kind)
    directory.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_staging(directory)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", dir=directory.parent))
    aside: Path | None = None
    try:
        honour_umask(staging, directory=True)
        yield staging
        write_marker(staging, kind=kind, **(record or {}))
        # One swap at a time per destination: concurrent writers (two processes building the
        # same cache entry) take turns, and the last one's output stays, whole.
        with destination_lock(directory):
            check_replaceable(directory, kind=kind)  # again: the block may have run for hours
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


def check_new_file(path: str | os.PathLike, flag: str = "--out") -> Path:
    """Raise :class:`UnsafeDestinationError` (one line) if anything is at ``path`` (a link
    too, not followed): outputs named as a file are never written over."""
    path = Path(path).expanduser()
    if os.path.lexists(path):
        raise UnsafeDestinationError(f"refusing to write over {str(path)!r} ({flag}): it exists; name a new file")
    return path


def place_new(temporary: str | os.PathLike, path: str | os.PathLike) -> None:
    """Move the finished ``temporary`` to ``path`` only if nothing is there: a hard link fails
    rather than replaces, so a file that appeared meanwhile is kept, and
    :class:`FileExistsError` is raised with ``temporary`` left in place. A filesystem without
    hard links gets a look, then a rename."""
    try:
        os.link(temporary, path, follow_symlinks=False)
    except FileExistsError:
        raise
    except OSError:
        if os.path.lexists(path):
            raise FileExistsError(17, "File exists", str(path)) from None
        os.replace(temporary, path)
        return
    os.unlink(temporary)


def atomic_write(path: str | os.PathLike, save: Callable[[BinaryIO], None], sync: bool = False,
                 replace: bool = True) -> Path:
    """Write ``path`` through a temporary sibling that ``save(stream)`` fills, then rename it
    into place: a reader never sees half a file, and a failure leaves nothing behind. The
    file gets the permissions ``open`` would give it (the umask honoured). With
    ``replace=False`` an existing ``path`` (there before, or appearing meanwhile) is never
    written over: :class:`UnsafeDestinationError`, and nothing is left behind. ``sync``: the
    file and then its directory are fsynced, so a power cut leaves the old file or the new one."""
    path = Path(path)
    if not replace:
        check_new_file(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            save(stream)
            if sync:
                stream.flush()
                os.fsync(stream.fileno())
        honour_umask(Path(temporary), directory=False)
        if replace:
            os.replace(temporary, path)
        else:
            try:
                place_new(temporary, path)
            except FileExistsError:
                raise UnsafeDestinationError(f"refusing to write over {str(path)!r}: it appeared while zoo wrote it; "
                                             "name a new file") from None
        if sync:
            descriptor = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(descriptor)
            finally:
                os.close(descriptor)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically (see :func:`atomic_write`)."""
    return atomic_write(path, lambda stream: stream.write(text.encode("utf-8")))
