"""Model weights on disk: safetensors, in shards of at most 16 MiB.

Shards keep every file of a release small enough to move through size-limited channels
(a device machine hands back files of at most 16 MiB; some hosts cap uploads) and let a
download resume file by file. The layout is the Hugging Face one: ``model.safetensors`` when
the weights fit in one shard, else ``model-0000K-of-0000N.safetensors`` plus
``model.safetensors.index.json``, written by ``huggingface_hub``; reading is plain
``safetensors``, so older single files load too. Nothing is unpickled. Tied parameters (one
tensor under two names) are stored once.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

MAX_SHARD_BYTES = 16 * 1024 * 1024
SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"
FILENAME_PATTERN = "model{suffix}.safetensors"


def save_weights(model: torch.nn.Module, directory: Path, max_shard_bytes: int = MAX_SHARD_BYTES) -> list[Path]:
    """Write ``model``'s weights into ``directory``; returns the files written."""
    from huggingface_hub import save_torch_model

    from zoo.files import honour_umask

    save_torch_model(model, directory, max_shard_size=max_shard_bytes, filename_pattern=FILENAME_PATTERN)
    files = weight_files(directory)
    for path in files:  # safetensors writes 0600; a release is read by others
        honour_umask(path, directory=False)
    return files


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

    shapes = {}
    for path in weight_files(directory):
        if not path.is_file():
            raise FileNotFoundError(f"{directory} lacks the shard {path.name}")
        try:
            with safe_open(str(path), framework="pt") as handle:
                shapes.update({key: tuple(handle.get_slice(key).get_shape()) for key in handle.keys()})
        except Exception as error:  # noqa: BLE001 - safetensors raises its own types for damaged files
            raise ValueError(f"{path} is not a readable safetensors file ({error})") from None
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
    result = model.load_state_dict(state, strict=False)
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
