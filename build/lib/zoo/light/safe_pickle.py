"""Read and write pickles that hold only plain data, never code.

Unpickling runs code: any global a pickle names (a class, ``os.system``) is imported and may
be called. The LIGHT release is distributed as pickles, so they are read with an unpickler
whose ``find_class`` refuses every global. Without globals the pickle machine can only
build builtins (None, bool, int, float, str, bytes, bytearray, list, tuple, dict, set,
frozenset), so nothing from the file can execute. Persistent ids are
refused too. A truncated or corrupt file, or one with bytes after its end, fails with a
clear error naming the file instead of a bare ``EOFError``.

Writing goes through a temporary file and ``os.replace`` so a crash never leaves a
half-written pickle in place, and checks the data would pass the same restricted reader.
"""

from __future__ import annotations

import copyreg
import io
import os
import pickle
import pickletools
from pathlib import Path
from typing import Any, BinaryIO

_EXTENSION_OPCODES = {"EXT1", "EXT2", "EXT4"}


class UnsafePickleError(pickle.UnpicklingError):
    """The pickle names a global (code to import or run) or a persistent id; refused."""


class CorruptPickleError(pickle.UnpicklingError):
    """The pickle is truncated, damaged or followed by extra bytes."""


class RestrictedUnpickler(pickle.Unpickler):
    """An unpickler that admits plain containers and scalars only.

    ``source`` names the file in error messages. Python-2 ``str`` objects are decoded as
    UTF-8 so that old pickles of text load as ``str``.
    """

    def __init__(self, file: BinaryIO, *, source: str = "<bytes>") -> None:
        super().__init__(file, encoding="utf-8", errors="strict")
        self.source = source

    def find_class(self, module: str, name: str):  # noqa: D401 - pickle API
        raise UnsafePickleError(
            f"{self.source}: refusing to unpickle the global {module}.{name}: this file may only hold "
            "plain data (lists, dicts, strings, numbers); loading a global would import and possibly "
            "run code. Only open pickles from a source you trust with the standard pickle module."
        )

    def persistent_load(self, pid: Any):
        raise UnsafePickleError(
            f"{self.source}: refusing a persistent id ({pid!r}); this file may only hold plain data"
        )


def loads_pickle(data: bytes, source: str = "<bytes>") -> Any:
    """Unpickle ``data`` with :class:`RestrictedUnpickler`."""
    return _load(io.BytesIO(data), source, data)


def load_pickle(path: str | os.PathLike) -> Any:
    """Unpickle the file at ``path`` with :class:`RestrictedUnpickler`."""
    path = Path(path)
    with open(path, "rb") as handle:
        return _load(handle, str(path), None)


def _load(handle: BinaryIO, source: str, data: bytes | None) -> Any:
    if copyreg._extension_cache:  # type: ignore[attr-defined]
        # Extension codes already resolved in this process bypass find_class; refuse them.
        _refuse_extension_codes(data if data is not None else handle.read(), source)
        handle.seek(0)
    unpickler = RestrictedUnpickler(handle, source=source)
    try:
        obj = unpickler.load()
    except UnsafePickleError:
        raise
    except EOFError as error:
        raise CorruptPickleError(f"{source}: the pickle ends early (truncated or empty file)") from error
    except (pickle.UnpicklingError, ValueError, TypeError, IndexError, KeyError, OverflowError,
            UnicodeDecodeError, RecursionError, MemoryError) as error:
        raise CorruptPickleError(f"{source}: not a valid pickle (truncated or damaged): {error}") from error
    if handle.read(1):
        raise CorruptPickleError(f"{source}: unexpected bytes after the end of the pickle")
    return obj


def _refuse_extension_codes(data: bytes, source: str) -> None:
    """Refuse extension-code opcodes, and fail closed: a stream this scan cannot read to
    the end is refused too, since the C unpickler may still read it (a protocol-0 string
    pickletools cannot decode, say) and then resolve a registered global."""
    try:
        for opcode, argument, _ in pickletools.genops(data):
            if opcode.name in _EXTENSION_OPCODES:
                raise UnsafePickleError(f"{source}: refusing extension code {argument} (a registered global)")
    except UnsafePickleError:
        raise
    except Exception as error:  # noqa: BLE001 - any scan failure is a refusal
        raise UnsafePickleError(f"{source}: cannot verify the pickle stream ({type(error).__name__}: {error}); "
                                "refusing it while extension codes are registered in this process") from None


def dump_pickle(obj: Any, path: str | os.PathLike, protocol: int = 4) -> Path:
    """Write ``obj`` to ``path`` atomically (temporary file in the same folder, then
    ``os.replace``). Refuses data that :func:`load_pickle` would refuse, so every pickle we
    write can be read back safely. Protocol 4 is readable by Python 3.4 and later.
    """
    path = Path(path)
    data = pickle.dumps(obj, protocol=protocol)
    try:
        loads_pickle(data, source=str(path))
    except UnsafePickleError as error:
        raise TypeError(f"refusing to write {path}: the data holds a non-plain object ({error})") from error
    from zoo.files import atomic_write

    atomic_write(path, lambda handle: handle.write(data), sync=True)
    return path
