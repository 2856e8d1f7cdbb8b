"""Weights are saved in the Hugging Face layout (whole tensors named by their ``state_dict``
keys, sharded at ``max_shard_size`` as transformers takes it) that plain safetensors and
transformers' sharded loader read; a model too big for one shard round-trips through several,
tied tensors stay tied, a folder in the ``#part`` layout of zoo 0.2 is refused in one line naming
the tool that rewrites it, and a damaged set of files is a one-line error."""

from __future__ import annotations

import json
import os
import stat

import pytest
import torch

from zoo.grounded import Grounded
from zoo.models.blocks import BlocksSupervised
from zoo.weights import INDEX_FILE, SINGLE_FILE, load_weights, save_weights, shard_size_bytes, weight_files


def tiny_policy() -> BlocksSupervised:
    torch.manual_seed(0)
    return BlocksSupervised(["<pad>", "<unk>", "move"], embedding_dim=8, lstm_dim=8, image_dim=8, conv_channels=4,
                       hidden_dim=8)


def test_a_model_larger_than_a_shard_is_saved_in_several_and_loads_identically(tmp_path):
    policy = tiny_policy()
    policy.save_pretrained(tmp_path / "policy", max_shard_size=20_000)
    files = weight_files(tmp_path / "policy")
    assert len(files) > 1 and all(f.stat().st_size <= 20_000 + 4096 for f in files)
    assert (tmp_path / "policy" / INDEX_FILE).is_file() and not (tmp_path / "policy" / SINGLE_FILE).exists()
    loaded = Grounded.from_pretrained(tmp_path / "policy")
    for name, tensor in policy.state_dict().items():
        torch.testing.assert_close(loaded.state_dict()[name], tensor, rtol=0, atol=0, msg=name)


def test_a_model_within_one_shard_keeps_the_single_file_layout_readable_by_others(tmp_path):
    previous = os.umask(0o022)
    try:
        tiny_policy().save_pretrained(tmp_path / "policy")
    finally:
        os.umask(previous)
    assert [f.name for f in weight_files(tmp_path / "policy")] == [SINGLE_FILE]
    assert stat.S_IMODE((tmp_path / "policy" / SINGLE_FILE).stat().st_mode) == 0o644


class Tied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder, self.decoder = torch.nn.Linear(64, 64), torch.nn.Linear(64, 64)
        self.decoder.weight = self.encoder.weight


def test_tied_tensors_are_stored_once_and_come_back_tied(tmp_path):
    model = Tied()
    save_weights(model, tmp_path, max_shard_size=10_000)
    stored = json.loads((tmp_path / INDEX_FILE).read_text())["weight_map"]
    assert len({"encoder.weight", "decoder.weight"} & {name.split("#")[0] for name in stored}) == 1
    fresh = Tied()
    load_weights(fresh, tmp_path)
    assert fresh.decoder.weight is fresh.encoder.weight
    torch.testing.assert_close(fresh.encoder.weight, model.encoder.weight)


def test_a_missing_shard_or_an_index_pointing_elsewhere_is_one_line(tmp_path):
    tiny_policy().save_pretrained(tmp_path / "policy", max_shard_size=20_000)
    weight_files(tmp_path / "policy")[-1].unlink()
    with pytest.raises(FileNotFoundError, match="lacks the shard"):
        Grounded.from_pretrained(tmp_path / "policy")
    index = tmp_path / "policy" / INDEX_FILE
    index.write_text(json.dumps({"metadata": {}, "weight_map": {"image.project.weight": "../../elsewhere.safetensors"}}))
    with pytest.raises(ValueError, match="outside its directory"):
        Grounded.from_pretrained(tmp_path / "policy")


def test_a_single_file_written_by_plain_safetensors_still_loads(tmp_path):
    """Checkpoints saved before sharding (safetensors.torch.save_model, no format metadata)."""
    from safetensors.torch import save_model

    policy = tiny_policy()
    policy.save_pretrained(tmp_path / "policy")
    save_model(policy, str(tmp_path / "policy" / SINGLE_FILE))  # overwrite in the old way
    loaded = Grounded.from_pretrained(tmp_path / "policy")
    torch.testing.assert_close(loaded.state_dict()["image.project.weight"], policy.state_dict()["image.project.weight"])


class BigEmbedding(torch.nn.Module):
    """An embedding larger than a shard, tied to an output layer (as a language model's is)."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(1000, 16)  # 64,000 bytes in float32
        self.out = torch.nn.Linear(16, 1000, bias=False)
        self.out.weight = self.embed.weight
        self.norm = torch.nn.LayerNorm(16)


def test_a_tensor_larger_than_max_shard_size_lands_whole_in_a_shard_of_its_own(tmp_path):
    from safetensors.torch import load_file

    torch.manual_seed(0)
    model = BigEmbedding()
    save_weights(model, tmp_path, max_shard_size=20_000)
    stored = json.loads((tmp_path / INDEX_FILE).read_text())["weight_map"]
    assert not any("#" in name for name in stored)
    embedding = ({"embed.weight", "out.weight"} & set(stored)).pop()  # the tied pair is stored once
    shard = load_file(str(tmp_path / stored[embedding]))
    assert list(shard) == [embedding] and shard[embedding].shape == (1000, 16)  # 64,000 bytes, alone
    fresh = BigEmbedding()
    load_weights(fresh, tmp_path)
    assert fresh.out.weight is fresh.embed.weight
    torch.testing.assert_close(fresh.embed.weight, model.embed.weight, rtol=0, atol=0)


def test_the_shards_are_plain_safetensors_of_whole_tensors_named_by_the_state_dict(tmp_path):
    from safetensors.torch import load_file

    policy = tiny_policy()
    policy.save_pretrained(tmp_path / "policy", max_shard_size="20KB")  # 20,000 bytes, as huggingface_hub reads it
    index = json.loads((tmp_path / "policy" / INDEX_FILE).read_text())
    shards = sorted(set(index["weight_map"].values()))
    assert shards == [f"model-{i:05d}-of-{len(shards):05d}.safetensors" for i in range(1, len(shards) + 1)]
    assert len(shards) > 1
    tensors = {}
    for name in shards:
        tensors.update(load_file(str(tmp_path / "policy" / name)))
    expected = policy.state_dict()
    assert set(tensors) == set(index["weight_map"]) == set(expected)
    for name, tensor in expected.items():
        assert torch.equal(tensors[name], tensor), name


def test_transformers_sharded_loader_reads_a_zoo_checkpoint_into_the_same_module(tmp_path):
    from transformers.trainer_utils import load_sharded_checkpoint

    policy = tiny_policy()
    policy.save_pretrained(tmp_path / "policy", max_shard_size=20_000)
    torch.manual_seed(1)
    fresh = BlocksSupervised(["<pad>", "<unk>", "move"], embedding_dim=8, lstm_dim=8, image_dim=8, conv_channels=4,
                             hidden_dim=8)
    assert not torch.equal(fresh.state_dict()["image.project.weight"], policy.state_dict()["image.project.weight"])
    result = load_sharded_checkpoint(fresh, tmp_path / "policy", strict=True)
    assert not result.missing_keys and not result.unexpected_keys
    for name, tensor in policy.state_dict().items():
        assert torch.equal(fresh.state_dict()[name], tensor), name


@pytest.mark.parametrize("size, expected", [(20_000, 20_000), ("20KB", 20_000), ("5GB", 5 * 10**9),
                                            ("1.5MB", 1_500_000)])
def test_max_shard_size_takes_bytes_or_a_size_the_way_transformers_does(size, expected):
    assert shard_size_bytes(size) == expected


@pytest.mark.parametrize("size", ["20 parsecs", "GB", 0, -5, 2.5, True])
def test_a_bad_max_shard_size_is_a_one_line_error(size, tmp_path):
    with pytest.raises(ValueError) as error:
        save_weights(tiny_policy(), tmp_path, max_shard_size=size)
    assert "\n" not in str(error.value)


def write_row_block_release(model: torch.nn.Module, directory, rows: int) -> dict[str, str]:
    """``model``'s weights in the layout older releases used: tensors of more than ``rows``
    rows split into ``NAME#partIofN`` blocks, one shard per block; returns the weight map."""
    from safetensors.torch import save_file

    stored: dict[str, torch.Tensor] = {}
    seen: set[int] = set()
    for name, tensor in model.state_dict().items():
        if tensor.data_ptr() in seen:  # tied: stored once
            continue
        seen.add(tensor.data_ptr())
        if tensor.dim() and tensor.shape[0] > rows:
            blocks = tensor.split(rows)
            stored.update({f"{name}#part{i}of{len(blocks)}": block.clone() for i, block in enumerate(blocks)})
        else:
            stored[name] = tensor.clone()
    names = sorted(stored)
    weight_map = {}
    for number, name in enumerate(names, start=1):
        shard = f"model-{number:05d}-of-{len(names):05d}.safetensors"
        save_file({name: stored[name].contiguous()}, str(directory / shard), metadata={"format": "pt"})
        weight_map[name] = shard
    (directory / INDEX_FILE).write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    return weight_map


def test_a_row_block_release_is_refused_in_one_line_naming_the_rewrite_tool(tmp_path):
    from zoo.weights import weight_shapes

    torch.manual_seed(0)
    model = BigEmbedding()
    write_row_block_release(model, tmp_path, rows=250)
    assert weight_shapes(tmp_path)["embed.weight"] == (1000, 16)  # the parameter budget still reads it
    with pytest.raises(ValueError, match="no longer reads: rewrite it with python tools/rewrite_release.py") as refused:
        load_weights(BigEmbedding(), tmp_path)
    assert "\n" not in str(refused.value)


def test_the_rewrite_tool_still_reads_row_blocks_whole_and_tied(tmp_path):
    from zoo.weights import reading_row_blocks

    torch.manual_seed(0)
    model = BigEmbedding()
    write_row_block_release(model, tmp_path, rows=250)
    fresh = BigEmbedding()
    with reading_row_blocks():
        load_weights(fresh, tmp_path)
    assert fresh.out.weight is fresh.embed.weight
    torch.testing.assert_close(fresh.embed.weight, model.embed.weight, rtol=0, atol=0)


def test_a_missing_row_block_is_one_line(tmp_path):
    from zoo.weights import reading_row_blocks

    weight_map = write_row_block_release(BigEmbedding(), tmp_path, rows=250)
    name = next(n for n in weight_map if n.endswith("#part1of4"))
    (tmp_path / weight_map.pop(name)).unlink()
    (tmp_path / INDEX_FILE).write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    with pytest.raises(ValueError, match="3 of the 4 blocks"), reading_row_blocks():
        load_weights(BigEmbedding(), tmp_path)


def test_float16_weights_are_half_the_bytes_and_load_into_a_float32_model(tmp_path):
    torch.manual_seed(0)
    policy = tiny_policy()
    policy.save_pretrained(tmp_path / "full")
    policy.save_pretrained(tmp_path / "half", weights_dtype=torch.float16)
    size = lambda d: sum(f.stat().st_size for f in weight_files(tmp_path / d))  # noqa: E731
    assert size("half") < 0.6 * size("full")
    loaded = Grounded.from_pretrained(tmp_path / "half")
    for name, tensor in policy.state_dict().items():
        got = loaded.state_dict()[name]
        assert got.dtype == tensor.dtype, name
        expected = tensor.half().to(tensor.dtype) if tensor.is_floating_point() else tensor
        torch.testing.assert_close(got, expected, rtol=0, atol=0, msg=name)
