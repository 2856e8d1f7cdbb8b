"""Model weights on disk: safetensors, in shards of at most 16 MiB.

Shards keep every file of a release small enough to move through size-limited channels
(a device machine hands back files of at most 16 MiB; some hosts cap uploads) and let a
download resume file by file. The layout is the Hugging Face one: ``model.safetensors`` when
the weights fit in one shard, else ``model-0000K-of-0000N.safetensors`` plus
``model.safetensors.index.json``, written by ``huggingface_hub``; reading is plain
``safetensors``, so older single files load too. Nothing is unpickled. Tied parameters (one
tensor under two names) are stored once.

A tensor larger than a shard (a 30k-word embedding is 47 MB in float32) is stored in row
blocks named ``NAME#partIofN``, each under the limit, and put back together on load. Weights
may be stored in a smaller float type (``dtype``: a release in float16 is half the download);
they load into the model's own precision.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import torch

MAX_SHARD_BYTES = 16 * 1024 * 1024
SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"
FILENAME_PATTERN = "model{suffix}.safetensors"
PART = re.compile(r"^(?P<name>.+)#part(?P<index>\d+)of(?P<count>\d+)$")
"""A row block of a tensor too large for one shard."""


def save_weights(model: torch.nn.Module, directory: Path, max_shard_bytes: int = MAX_SHARD_BYTES,
                 dtype: torch.dtype | None = None) -> list[Path]:
    """Write ``model``'s weights into ``directory`` (floating tensors as ``dtype`` when given);
    returns the files written."""
    from huggingface_hub import save_torch_state_dict

    from zoo.files import honour_umask

    state = storable_state(model.state_dict(), max_shard_bytes, dtype)
    save_torch_state_dict(state, directory, max_shard_size=max_shard_bytes, filename_pattern=FILENAME_PATTERN)
    files = weight_files(directory)
    for path in files:  # safetensors writes 0600; a release is read by others
        honour_umask(path, directory=False)
    return files


def storable_state(state: dict[str, torch.Tensor], max_bytes: int, dtype: torch.dtype | None = None
                   ) -> dict[str, torch.Tensor]:
    """``state`` as it is written: tied tensors still shared (huggingface_hub keeps one of
    them), floating tensors in ``dtype``, and tensors over ``max_bytes`` in row blocks."""
    out: dict[str, torch.Tensor] = {}
    converted: dict[tuple, torch.Tensor] = {}
    split_done: set[tuple] = set()
    for name, tensor in state.items():
        tensor = tensor.detach()
        key = (tensor.data_ptr(), tuple(tensor.shape), tensor.stride()) if tensor.numel() else None
        if dtype is not None and tensor.is_floating_point() and tensor.dtype != dtype:
            if key is None:  # empty: nothing to share
                tensor = tensor.to(dtype)
            else:  # tied names get one converted tensor, so they stay one stored tensor
                if key not in converted:
                    converted[key] = tensor.to(dtype)
                tensor = converted[key]
        if tensor.dim() == 0 or tensor.numel() * tensor.element_size() <= max_bytes:
            out[name] = tensor
            continue
        if key in split_done:  # tied to a tensor already stored in blocks: loads through the tie
            continue
        split_done.add(key)
        row_bytes = tensor[0].numel() * tensor.element_size()
        blocks = tensor.split(max(1, max_bytes // max(row_bytes, 1)))
        for index, block in enumerate(blocks):
            out[f"{name}#part{index}of{len(blocks)}"] = block.clone()  # own storage: not "shared"
    return out


def join_parts(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The row blocks of :func:`storable_state` put back into whole tensors."""
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


def weight_files(directory: Path) -> list[Path]:
    """The weight files of a saved model: the single file, or the shards its index names."""
    directory = Path(directory)
    index = directory / INDEX_FILE
    if index.is_file():
        try:
            names = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        except (ValueError, KeyError, TypeError) as error:
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
