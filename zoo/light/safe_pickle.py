"""Read and write pickles that hold only plain data, never code.

Unpickling runs code: any global a pickle names (a class, ``os.system``) is imported and may
be called. The LIGHT release is distributed as pickles, so they are read with an unpickler
whose ``find_class`` refuses every global. Without globals the pickle machine can only
build builtins (None, bool, int, float, str, bytes, bytearray, list, tuple, dict, set,
frozenset), so nothing from the file can execute. Persistent ids are
refused too. A truncated or corrupt file, or one with bytes after its end, fails with a
clear error naming the file instead of a bare ``EOFError``.

Before the unpickler sees a byte, :func:`scan_pickle` walks the opcodes (without building
anything) and refuses a stream nested deeper than :data:`MAX_PICKLE_DEPTH`, larger than
:data:`MAX_PICKLE_BYTES`, naming memo slots far past the ones it filled, or using extension
codes. Depth matters because CPython hashes a tuple key by recursing in C with no limit: a
2 MB pickle of a 2,000,000-deep tuple used as a dict key overflows the C stack (SIGSEGV)
inside ``Unpickler.load``, where no exception can be caught.

Writing goes through a temporary file and ``os.replace`` so a crash never leaves a
half-written pickle in place, and checks the data would pass the same restricted reader.
"""

from __future__ import annotations

import io
import os
import pickle
import pickletools
from pathlib import Path
from typing import Any, BinaryIO

MAX_PICKLE_DEPTH = 256
"""Deepest nesting of containers a pickle may build (the LIGHT release nests about 6 deep)."""

MAX_PICKLE_BYTES = 4 * 1024 ** 3
"""Largest pickle read (the full LIGHT release is a few hundred MB)."""

_EXTENSION_OPCODES = {"EXT1", "EXT2", "EXT4"}
_MEMO_STORES = {"PUT", "BINPUT", "LONG_BINPUT"}
_MEMO_LOADS = {"GET", "BINGET", "LONG_BINGET"}
_MUTATORS = {"APPEND", "APPENDS", "SETITEM", "SETITEMS", "ADDITEMS", "BUILD"}


class UnsafePickleError(pickle.UnpicklingError):
    """The pickle names a global (code to import or run) or a persistent id; refused."""


class CorruptPickleError(pickle.UnpicklingError):
    """The pickle is truncated, damaged or followed by extra bytes."""


class PickleLimitError(UnsafePickleError):
    """The pickle is nested too deeply, too large or shaped to make the unpickler allocate
    far more than it holds; refused before unpickling."""


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
    """Unpickle ``data`` with :class:`RestrictedUnpickler`, after :func:`scan_pickle`."""
    return _load(bytes(data), source)


def load_pickle(path: str | os.PathLike) -> Any:
    """Unpickle the file at ``path`` with :class:`RestrictedUnpickler`, after :func:`scan_pickle`."""
    path = Path(path)
    size = path.stat().st_size
    if size > MAX_PICKLE_BYTES:
        raise PickleLimitError(f"{path}: {size} bytes, more than the {MAX_PICKLE_BYTES} a pickle may have")
    return _load(path.read_bytes(), str(path))


def _load(data: bytes, source: str) -> Any:
    scan_pickle(data, source)
    handle = io.BytesIO(data)
    unpickler = RestrictedUnpickler(handle, source=source)
    try:
        obj = unpickler.load()
    except UnsafePickleError:
        raise
    except EOFError as error:
        raise CorruptPickleError(f"{source}: the pickle ends early (truncated or empty file)") from error
    except (pickle.UnpicklingError, ValueError, TypeError, IndexError, KeyError, OverflowError, AttributeError,
            UnicodeDecodeError, RecursionError, MemoryError) as error:  # AttributeError: an APPEND onto a set
        raise CorruptPickleError(f"{source}: not a valid pickle (truncated or damaged): {error}") from error
    if handle.read(1):
        raise CorruptPickleError(f"{source}: unexpected bytes after the end of the pickle")
    return obj


class _Node:
    """What the scan knows of one object on the pickle stack: how deep it nests, and whether
    it already sits inside another container (then growing it would make that one deeper
    behind the scan's back)."""

    __slots__ = ("depth", "placed")

    def __init__(self, depth: int) -> None:
        self.depth, self.placed = depth, False


_SCALAR = _Node(0)


def _stack_effects() -> dict[str, tuple[bool, int, int]]:
    """Per opcode: (pops to a mark, fixed items popped, items pushed), from pickletools."""
    effects = {}
    for op in pickletools.opcodes:
        before = [item.name for item in op.stack_before]
        to_mark = "stackslice" in before
        fixed = len([name for name in before if name not in ("mark", "stackslice")])
        effects[op.name] = (to_mark, fixed, len(op.stack_after))
    return effects


_EFFECTS = _stack_effects()
_LENGTH_BYTES = {pickletools.TAKEN_FROM_ARGUMENT1: (1, False), pickletools.TAKEN_FROM_ARGUMENT4: (4, True),
                 pickletools.TAKEN_FROM_ARGUMENT4U: (4, False), pickletools.TAKEN_FROM_ARGUMENT8U: (8, False)}
_ARGUMENT_WANTED = _MEMO_STORES | _MEMO_LOADS | _EXTENSION_OPCODES


def _opcode_table() -> list:
    """Per byte value: ``(name, fixed argument size or a pickletools length code, lines)``."""
    table: list = [None] * 256
    for op in pickletools.opcodes:
        size = op.arg.n if op.arg is not None else 0
        lines = 2 if op.arg is not None and op.arg.name == "stringnl_noescape_pair" else 1
        table[ord(op.code)] = (op.name, size, lines)
    return table


_TABLE = _opcode_table()


def _opcodes(data: bytes):
    """``(name, argument)`` for each opcode up to STOP, as :func:`pickletools.genops` walks
    them but several times faster, and without decoding arguments the scan does not need
    (so Python 2's non-ASCII protocol-0 strings, which pickletools cannot decode and the
    unpickler reads, pass). ``argument`` is set for memo and extension opcodes only."""
    end, pos = len(data), 0
    while True:
        if pos >= end:
            raise EOFError
        entry = _TABLE[data[pos]]
        if entry is None:
            raise ValueError(f"unknown opcode {data[pos:pos + 1]!r} at byte {pos}")
        name, size, lines = entry
        pos += 1
        argument = None
        if size > 0:
            if pos + size > end:
                raise EOFError
            if name in _ARGUMENT_WANTED:
                argument = int.from_bytes(data[pos:pos + size], "little", signed=name == "EXT4")
            pos += size
        elif size == pickletools.UP_TO_NEWLINE:
            for _ in range(lines):
                newline = data.find(b"\n", pos)
                if newline < 0:
                    raise EOFError
                line, pos = data[pos:newline], newline + 1
            if name in _ARGUMENT_WANTED:
                argument = int(line)
        elif size in _LENGTH_BYTES:
            width, signed = _LENGTH_BYTES[size]
            if pos + width > end:
                raise EOFError
            length = int.from_bytes(data[pos:pos + width], "little", signed=signed)
            if length < 0:
                raise ValueError(f"{name} with a negative length")
            pos += width + length
            if pos > end:
                raise EOFError
        yield name, argument
        if name == "STOP":
            return


def scan_pickle(data: bytes, source: str = "<bytes>", max_depth: int = MAX_PICKLE_DEPTH) -> None:
    """Refuse, in one line, a pickle the restricted unpickler must not read: nested deeper
    than ``max_depth``, over :data:`MAX_PICKLE_BYTES`, storing memo slots far beyond those it
    filled (the unpickler would size its memo table by the index), growing a container after
    nesting it (the depth seen here would no longer hold), or using extension codes. Nothing
    is built: the scan models the unpickler's stack by each opcode's documented effect."""
    if len(data) > MAX_PICKLE_BYTES:
        raise PickleLimitError(f"{source}: {len(data)} bytes, more than the {MAX_PICKLE_BYTES} a pickle may have")
    stack: list[_Node] = []
    marks: list[int] = []  # where each open MARK sits in ``stack``
    memo: dict[int, _Node] = {}
    stored = 0
    # What pickle.dump leaves open while it writes data nested ``max_depth`` deep: a MARK per
    # level at most, and per level a container with a batch of up to 1000 items (2000 for a
    # dict's keys and values). More means deeper nesting, refused before it is all read.
    max_stack = 2 * _BATCH * (max_depth + 2)

    def fence() -> int:
        return marks[-1] if marks else 0

    def top() -> _Node:
        if len(stack) <= fence():
            raise ValueError("the unpickling stack underflows")
        return stack[-1]

    try:
        for name, argument in _opcodes(data):
            if name in _SCALAR_PUSHES:  # the common cases first: strings, numbers, empty containers
                stack.append(_SCALAR)
                continue
            if name in _EMPTY_CONTAINERS:
                if len(stack) > max_stack:
                    raise PickleLimitError(f"{source}: more than {max_stack} objects wait on the unpickling stack "
                                           f"(nested more than {max_depth} levels deep); refused")
                stack.append(_Node(1))
                continue
            if name == "MEMOIZE":
                memo[stored] = top()
                stored += 1
                continue
            if name in _EXTENSION_OPCODES:
                raise UnsafePickleError(f"{source}: refusing extension code {argument} (a registered global)")
            if name == "MARK":
                if len(marks) > max_depth:
                    raise PickleLimitError(f"{source}: more than {max_depth} open marks "
                                           f"(nested more than {max_depth} levels deep); refused")
                marks.append(len(stack))
            elif name in _MEMO_STORES or name == "MEMOIZE":
                index = stored if name == "MEMOIZE" else int(argument)
                if index > 2 * stored + 1024:
                    raise PickleLimitError(f"{source}: memo slot {index} after {stored} stored objects; "
                                           "the unpickler would allocate a table that large")
                memo[index] = top()
                stored += 1
            elif name in _MEMO_LOADS:
                stack.append(memo[int(argument)])
            elif name == "DUP":
                stack.append(top())
            elif name == "POP" and len(stack) <= fence() and marks:
                marks.pop()  # the unpickler's POP drops an empty mark
            else:
                to_mark, fixed, pushed = _EFFECTS[name]
                children: list[_Node] = []
                if to_mark:
                    if not marks:
                        raise ValueError(f"{name} without a MARK")
                    mark = marks.pop()
                    children = stack[mark:]
                    del stack[mark:]
                if name in _MUTATORS:
                    fixed -= 1  # the container itself stays on the stack
                if fixed:
                    if len(stack) - fixed < fence():
                        raise ValueError(f"{name} with too few items on the stack")
                    children += stack[-fixed:]
                    del stack[-fixed:]
                if name in _MUTATORS:
                    target = top()
                    if target is _SCALAR:
                        raise ValueError(f"{name} on something that is not a container")
                    if children and target.placed:
                        raise PickleLimitError(f"{source}: the pickle grows a container after nesting it "
                                               "(recursive data); refused")
                    _place(children, target, max_depth, source)
                elif pushed:
                    built = _Node(1) if children or name in _CONTAINERS else _SCALAR
                    _place(children, built, max_depth, source)
                    stack.extend([built] * pushed)
    except UnsafePickleError:
        raise
    except EOFError:
        raise CorruptPickleError(f"{source}: the pickle ends early (truncated or empty file)") from None
    except (ValueError, IndexError, KeyError, TypeError, OverflowError) as error:
        raise CorruptPickleError(f"{source}: not a valid pickle (truncated or damaged): {error}") from None


_BATCH = 1000  # pickle.dump's items per APPENDS/SETITEMS
_EMPTY_CONTAINERS = {"EMPTY_LIST", "EMPTY_TUPLE", "EMPTY_DICT", "EMPTY_SET"}
_SCALAR_PUSHES = {op.name for op in pickletools.opcodes if not op.stack_before and len(op.stack_after) == 1
                  and op.name not in _EMPTY_CONTAINERS | _MEMO_LOADS | _EXTENSION_OPCODES | {"MARK"}}
_CONTAINERS = {"EMPTY_LIST", "EMPTY_TUPLE", "EMPTY_DICT", "EMPTY_SET", "LIST", "TUPLE", "DICT", "FROZENSET",
               "TUPLE1", "TUPLE2", "TUPLE3", "REDUCE", "BUILD", "INST", "OBJ", "NEWOBJ", "NEWOBJ_EX"}


def _place(children: list, parent: _Node, max_depth: int, source: str) -> None:
    for child in children:
        if child is not _SCALAR:
            child.placed = True
            if child.depth + 1 > parent.depth:
                parent.depth = child.depth + 1
    if parent.depth > max_depth:
        raise PickleLimitError(f"{source}: nested more than {max_depth} levels deep; refused")


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
    from zoo.safe_writes import atomic_write

    atomic_write(path, lambda handle: handle.write(data), sync=True)
    return path
