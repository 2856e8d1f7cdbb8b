"""Weights are safetensors shards of at most 16 MiB (a size limit, not a format change): a
model too big for one shard round-trips through several, tied tensors stay tied, and a damaged
set of files is a one-line error."""

from __future__ import annotations

import json
import os
import stat

import pytest
import torch

from zoo.grounded import Grounded
from zoo.models.blocks import BlocksSupervised
from zoo.weights import INDEX_FILE, SINGLE_FILE, load_weights, save_weights, weight_files


def tiny_policy() -> BlocksSupervised:
    torch.manual_seed(0)
    return BlocksSupervised(["<pad>", "<unk>", "move"], embedding_dim=8, lstm_dim=8, image_dim=8, conv_channels=4,
                       hidden_dim=8)


def test_a_model_larger_than_a_shard_is_saved_in_several_and_loads_identically(tmp_path):
    policy = tiny_policy()
    policy.save_pretrained(tmp_path / "policy", max_shard_bytes=20_000)
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
    save_weights(model, tmp_path, max_shard_bytes=10_000)
    stored = json.loads((tmp_path / INDEX_FILE).read_text())["weight_map"]
    assert len({"encoder.weight", "decoder.weight"} & {name.split("#")[0] for name in stored}) == 1
    fresh = Tied()
    load_weights(fresh, tmp_path)
    assert fresh.decoder.weight is fresh.encoder.weight
    torch.testing.assert_close(fresh.encoder.weight, model.encoder.weight)


def test_a_missing_shard_or_an_index_pointing_elsewhere_is_one_line(tmp_path):
    tiny_policy().save_pretrained(tmp_path / "policy", max_shard_bytes=20_000)
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


def test_a_tensor_larger_than_a_shard_is_stored_in_row_blocks_under_the_limit(tmp_path):
    from zoo.weights import weight_shapes

    torch.manual_seed(0)
    model = BigEmbedding()
    save_weights(model, tmp_path, max_shard_bytes=20_000)
    files = weight_files(tmp_path)
    assert len(files) >= 4 and all(f.stat().st_size <= 20_000 + 1024 for f in files)  # a header's worth of slack
    stored = json.loads((tmp_path / INDEX_FILE).read_text())["weight_map"]
    blocks = sorted(name for name in stored if name.startswith(("embed.weight#", "out.weight#")))
    assert len(blocks) == 4 and blocks[0].endswith("#part0of4")  # 16,000-byte blocks; the tied pair stored once
    assert weight_shapes(tmp_path)[blocks[0].split("#")[0]] == (1000, 16)
    fresh = BigEmbedding()
    load_weights(fresh, tmp_path)
    assert fresh.out.weight is fresh.embed.weight
    torch.testing.assert_close(fresh.embed.weight, model.embed.weight, rtol=0, atol=0)


def test_a_missing_row_block_is_one_line(tmp_path):
    from safetensors.torch import load_file, save_file

    save_weights(BigEmbedding(), tmp_path, max_shard_bytes=20_000)
    stored = json.loads((tmp_path / INDEX_FILE).read_text())["weight_map"]
    name = next(n for n in stored if n.endswith("#part1of4"))
    shard = tmp_path / stored[name]
    tensors = {k: v for k, v in load_file(str(shard)).items() if k != name}
    save_file(tensors, str(shard), metadata={"format": "pt"})
    with pytest.raises(ValueError, match="3 of the 4 blocks"):
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
