"""Model weights on disk, in the Hugging Face layout: ``model.safetensors`` when the weights
fit in one shard, else ``model-0000K-of-0000N.safetensors`` plus ``model.safetensors.index.json``,
written by ``huggingface_hub.save_torch_state_dict``. Every stored tensor is whole and named by
its ``state_dict`` key, so ``safetensors.torch.load_file`` over the shards, transformers'
sharded loader and the Hub's file viewer all read a zoo checkpoint as they read any other.
Nothing is unpickled.

``max_shard_size`` is taken as transformers takes it: bytes as an int, or a string such as
``"5GB"`` or ``"500MB"`` (decimal units, parsed by huggingface_hub); the default is
huggingface_hub's, ``"5GB"``. A tensor larger than the limit gets a shard of its own. Tied
parameters (one tensor under two names) are stored once, under the name huggingface_hub keeps,
and come back tied. Weights may be stored in a smaller float type (``dtype``: a release in
float16 is half the download); they load into the model's own precision.

Releases of zoo 0.2 and before split a tensor larger than a shard into row blocks named
``NAME#partIofN``. zoo no longer loads them: such a folder is refused in one line naming
``tools/rewrite_release.py``, which rewrites it into the standard layout (the tool reads the
old layout inside :func:`reading_row_blocks`).
"""

from __future__ import annotations

import contextvars
import logging
import math
import re
from contextlib import contextmanager
from pathlib import Path

import torch

from zoo.safe_json import read_json

log = logging.getLogger(__name__)

DEFAULT_MAX_SHARD_SIZE = "5GB"
"""huggingface_hub's own default for ``save_torch_state_dict``."""
SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"
FILENAME_PATTERN = "model{suffix}.safetensors"
PART = re.compile(r"^(?P<name>.+)#part(?P<index>\d+)of(?P<count>\d+)$")
"""A row block of a tensor, as releases before the standard layout stored large tensors."""


def shard_size_bytes(max_shard_size: int | str) -> int:
    """``max_shard_size`` in bytes: an int as it is, a string (``"5GB"``, ``"200MB"``, ``"1.5GB"``)
    through huggingface_hub's parser, the one transformers' ``save_pretrained`` relies on."""
    from huggingface_hub.serialization._base import parse_size_to_int

    if isinstance(max_shard_size, bool) or not isinstance(max_shard_size, (int, str)):
        raise ValueError(f"max_shard_size takes bytes (an int) or a size such as '5GB', got {max_shard_size!r}")
    size = parse_size_to_int(max_shard_size) if isinstance(max_shard_size, str) else max_shard_size
    if size <= 0:
        raise ValueError(f"max_shard_size must be positive, got {max_shard_size!r}")
    return size


def save_weights(model: torch.nn.Module, directory: Path, max_shard_size: int | str = DEFAULT_MAX_SHARD_SIZE,
                 dtype: torch.dtype | None = None) -> list[Path]:
    """Write ``model``'s weights into ``directory`` in the Hugging Face layout (floating
    tensors as ``dtype`` when given); returns the files written."""
    from huggingface_hub import save_torch_state_dict

    from zoo.safe_writes import honour_umask

    limit = shard_size_bytes(max_shard_size)
    save_torch_state_dict(storable_state(model.state_dict(), dtype), directory, max_shard_size=limit,
                          filename_pattern=FILENAME_PATTERN)
    files = weight_files(directory)
    for path in files:  # safetensors writes 0600; a release is read by others
        honour_umask(path, directory=False)
    return files


def storable_state(state: dict[str, torch.Tensor], dtype: torch.dtype | None = None) -> dict[str, torch.Tensor]:
    """``state`` as it is written: whole tensors under their ``state_dict`` names, floating ones
    in ``dtype``, tied ones still sharing one tensor (huggingface_hub stores one of them)."""
    out: dict[str, torch.Tensor] = {}
    converted: dict[tuple, torch.Tensor] = {}
    for name, tensor in state.items():
        tensor = tensor.detach()
        if dtype is not None and tensor.is_floating_point() and tensor.dtype != dtype:
            if not tensor.numel():  # empty: nothing to share
                tensor = tensor.to(dtype)
            else:  # tied names get one converted tensor, so they stay one stored tensor
                key = (tensor.data_ptr(), tuple(tensor.shape), tensor.stride())
                if key not in converted:
                    converted[key] = tensor.to(dtype)
                tensor = converted[key]
        out[name] = tensor
    return out


def join_parts(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Row blocks (``NAME#partIofN``, the layout of older releases) put back into whole tensors."""
    parts: dict[str, dict[int, torch.Tensor]] = {}
    counts: dict[str, int] = {}
    whole = {}
    for key, tensor in state.items():
        match = PART.match(key)
        if match is None:
            whole[key] = tensor
            continue
        name = match["name"]
        parts.setdefault(name, {})[int(match["index"])] = tensor
        counts[name] = int(match["count"])
    for name, blocks in parts.items():
        if sorted(blocks) != list(range(counts[name])):
            raise ValueError(f"the weights hold {len(blocks)} of the {counts[name]} blocks of {name}")
        whole[name] = torch.cat([blocks[i] for i in range(counts[name])])
    return whole


_row_blocks_readable = contextvars.ContextVar("row_blocks_readable", default=False)


@contextmanager
def reading_row_blocks():
    """Inside: :func:`load_weights` joins ``#part`` row blocks instead of refusing them (for the
    tool that rewrites such a release, and nothing else)."""
    token = _row_blocks_readable.set(True)
    try:
        yield
    finally:
        _row_blocks_readable.reset(token)


def has_row_blocks(state: dict[str, torch.Tensor]) -> bool:
    """Whether ``state`` holds any ``#part`` row block (a release in the old layout)."""
    return any(PART.match(key) for key in state)


def weight_files(directory: Path) -> list[Path]:
    """The weight files of a saved model: the single file, or the shards its index names."""
    directory = Path(directory)
    index = directory / INDEX_FILE
    if index.is_file():
        try:
            names = sorted(set(read_json(index)["weight_map"].values()))
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise ValueError(f"{index} is not a readable shard index ({error})") from None
        if any(Path(name).name != name for name in names):
            raise ValueError(f"{index} names a shard outside its directory")
        return [directory / name for name in names]
    if (directory / SINGLE_FILE).is_file():
        return [directory / SINGLE_FILE]
    raise FileNotFoundError(f"{directory} has no {SINGLE_FILE} (nor {INDEX_FILE})")


def weight_shapes(directory: Path) -> dict[str, tuple[int, ...]]:
    """Every stored tensor's shape, read from the safetensors headers (no tensor is loaded)."""
    from safetensors import safe_open

    shapes: dict[str, tuple[int, ...]] = {}
    rows: dict[str, list[tuple[int, tuple[int, ...]]]] = {}
    for path in weight_files(directory):
        if not path.is_file():
            raise FileNotFoundError(f"{directory} lacks the shard {path.name}")
        try:
            with safe_open(str(path), framework="pt") as handle:
                for key in handle.keys():
                    shape, match = tuple(handle.get_slice(key).get_shape()), PART.match(key)
                    if match is None:
                        shapes[key] = shape
                    else:
                        rows.setdefault(match["name"], []).append((int(match["index"]), shape))
        except Exception as error:  # noqa: BLE001 - safetensors raises its own types for damaged files
            raise ValueError(f"{path} is not a readable safetensors file ({error})") from None
    for name, blocks in rows.items():
        blocks.sort()
        shapes[name] = (sum(shape[0] for _, shape in blocks), *blocks[0][1][1:])
    return shapes


def load_weights(model: torch.nn.Module, directory: Path, device: str | torch.device = "cpu") -> None:
    """Load every parameter and buffer of ``model`` from ``directory``, strictly: a tensor
    missing from the files is an error unless it is tied to one that was loaded. Files written
    by ``safetensors.torch.save_model`` (without the ``format`` metadata huggingface_hub's
    loader insists on) load too."""
    from safetensors.torch import load_file

    state: dict[str, torch.Tensor] = {}
    for path in weight_files(directory):
        if not path.is_file():
            raise FileNotFoundError(f"{directory} lacks the shard {path.name}")
        state.update(load_file(str(path), device=str(device)))
    if has_row_blocks(state) and not _row_blocks_readable.get():
        raise ValueError(f"{directory} stores tensors in '#part' row blocks, the layout of zoo 0.2 releases, which "
                         "zoo no longer reads: rewrite it with python tools/rewrite_release.py DIRECTORY")
    result = model.load_state_dict(join_parts(state), strict=False)
    missing, unexpected = set(result.missing_keys), set(result.unexpected_keys)
    missing -= tied_to_loaded(model, missing)
    if missing or unexpected:
        raise RuntimeError(f"weights do not match the model: missing {sorted(missing)[:5]}, "
                           f"unexpected {sorted(unexpected)[:5]}")


def tied_to_loaded(model: torch.nn.Module, missing: set[str]) -> set[str]:
    """The names in ``missing`` whose tensor is shared with a name that was loaded."""
    state = model.state_dict(keep_vars=True)
    owners: dict[int, set[str]] = {}
    for name, tensor in state.items():
        if tensor.numel():  # empty tensors all sit at address 0 without being tied
            owners.setdefault(tensor.data_ptr(), set()).add(name)
    return {name for name in missing if state[name].numel() and owners[state[name].data_ptr()] - missing}


class ArchitectureTooLarge(ValueError):
    """A config describes more parameters than its weights hold; raised while it is built."""


@contextmanager
def parameter_budget(limit: int, where: Path):
    """Abort any module construction in this block once the parameters and buffers it has
    registered or deep-copied exceed ``limit`` elements: a config asking for 1500 layers stops after the
    few the weights could fill, instead of building the rest (even on the meta device, each
    layer costs Python objects)."""
    from torch.nn.modules import module as torch_module

    seen: set[int] = set()
    total = [0]

    def count(_module, _name, tensor):
        if tensor is not None and id(tensor) not in seen:
            seen.add(id(tensor))
            total[0] += tensor.numel()
            if total[0] > limit:
                raise ArchitectureTooLarge(f"{where}: the config builds more than the {limit} parameters "
                                           "the weights allow; refused before allocating")

    def counted_deepcopy(parameter, memo):  # layer stacks (nn.TransformerEncoder) are deep copies
        copied = deepcopy_parameter(parameter, memo)
        count(None, None, copied)
        return copied

    deepcopy_parameter = torch.nn.Parameter.__deepcopy__
    handles = [torch_module.register_module_parameter_registration_hook(count),
               torch_module.register_module_buffer_registration_hook(count)]
    torch.nn.Parameter.__deepcopy__ = counted_deepcopy
    try:
        yield
    finally:
        torch.nn.Parameter.__deepcopy__ = deepcopy_parameter
        for handle in handles:
            handle.remove()


def check_against_weights(target: type, config: dict, directory: Path) -> None:
    """Refuse, in one line and before anything is allocated, a config whose architecture the
    weights cannot fill: built on the meta device (shapes, no storage) under a parameter
    budget of four times what the safetensors headers hold (ties and discarded heads are built
    before they are tied or dropped), every parameter and buffer must be in
    the headers with its shape (a tensor tied to another counts once), and the architecture's
    parameters may not outnumber the stored ones. So ``lstm_dim=200000``, ``layers: 1500`` or
    an ensemble listing its members 150 times fails here instead of allocating gigabytes."""
    shapes = weight_shapes(directory)
    stored = sum(math.prod(shape) for shape in shapes.values())
    where = Path(directory) / "config.json"
    try:
        with parameter_budget(4 * stored + 2 ** 20, where), torch.device("meta"):
            skeleton = target(**config)
            skeleton.load_extra_files(directory)  # vocabularies that size embeddings
    except ArchitectureTooLarge:
        raise
    except Exception as error:  # noqa: BLE001 - a config the constructor rejects
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(f"cannot build a {target.__name__} from {where}: {first}") from None
    groups: dict[int, list[str]] = {}
    tensors = skeleton.state_dict(keep_vars=True)
    for name, tensor in tensors.items():
        groups.setdefault(id(tensor), []).append(name)
    needed = 0
    for names in groups.values():
        shape = tuple(tensors[names[0]].shape)
        if 0 in shape:  # sized by the model's own files when it loads (IR's vocabulary), not by the config
            continue
        needed += math.prod(shape)
        present = [name for name in names if name in shapes]
        if not present:
            raise ValueError(f"{directory}: the config makes {names[0]} {shape}, which the weights do not hold")
        for name in present:
            if shapes[name] != shape:
                raise ValueError(f"{directory}: the config makes {name} {shape}, the weights hold {shapes[name]}")
    if needed > stored:
        raise ValueError(f"{directory}: the config needs {needed} parameters, the weights hold {stored}")
