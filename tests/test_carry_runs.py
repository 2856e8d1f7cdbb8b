"""tools/carry_runs.py: a run's state goes into carried/ and comes back on a fresh clone."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parent.parent / "tools" / "carry_runs.py"


@pytest.fixture(scope="module")
def carry():
    spec = importlib.util.spec_from_file_location("carry_runs", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_a_saved_run_comes_back_on_a_clone_without_runs(tmp_path, carry):
    here, clone = tmp_path / "here", tmp_path / "clone"
    write(here / "runs/blocks/bandit-s1/last.ckpt", b"weights and optimiser")
    write(here / "runs/blocks/sup-s1/checkpoints/epoch001.ckpt", b"supervised start")
    write(here / "runs/blocks/sup-s1/wandb/run.wandb", b"logs we do not carry")
    carry.main(["--root", str(here), "save", "runs/blocks/bandit-s1/last.ckpt", "runs/blocks/sup-s1"])

    manifest = json.loads((here / "carried/MANIFEST.json").read_text())
    assert sorted(manifest) == ["runs/blocks/bandit-s1/last.ckpt", "runs/blocks/sup-s1/checkpoints/epoch001.ckpt"]

    shutil.copytree(here / "carried", clone / "carried")  # what git brings
    restored, kept = carry.restore(clone)
    assert len(restored) == 2 and kept == []
    assert (clone / "runs/blocks/bandit-s1/last.ckpt").read_bytes() == b"weights and optimiser"


def test_restore_never_overwrites_newer_state(tmp_path, carry):
    write(tmp_path / "runs/a/last.ckpt", b"old")
    carry.save(tmp_path, ["runs/a/last.ckpt"])
    write(tmp_path / "runs/a/last.ckpt", b"newer, written after the save")
    restored, kept = carry.restore(tmp_path)
    assert restored == [] and kept == ["runs/a/last.ckpt"]
    assert (tmp_path / "runs/a/last.ckpt").read_bytes() == b"newer, written after the save"


def test_a_save_replaces_the_carried_set_so_finished_runs_drop_out(tmp_path, carry):
    write(tmp_path / "runs/a/last.ckpt", b"a")
    write(tmp_path / "runs/b/last.ckpt", b"b")
    carry.save(tmp_path, ["runs/a/last.ckpt"])
    carry.save(tmp_path, ["runs/b/last.ckpt"])
    assert not (tmp_path / "carried/runs/a").exists()
    assert json.loads((tmp_path / "carried/MANIFEST.json").read_text()) == {
        "runs/b/last.ckpt": {"sha256": carry.sha256(tmp_path / "runs/b/last.ckpt"), "bytes": 1}}


def test_a_mid_session_save_with_keep_refreshes_one_run_and_keeps_the_others(tmp_path, carry):
    write(tmp_path / "runs/a/last.ckpt", b"a, epoch 1")
    write(tmp_path / "runs/b/last.ckpt", b"b")
    carry.save(tmp_path, ["runs/a/last.ckpt", "runs/b/last.ckpt"])
    (tmp_path / "runs/b/last.ckpt").unlink()  # b finished and was cleaned up here; its carried copy stays
    write(tmp_path / "runs/a/last.ckpt", b"a, epoch 2")
    carry.main(["--root", str(tmp_path), "save", "--keep", "runs/a/last.ckpt"])

    manifest = json.loads((tmp_path / "carried/MANIFEST.json").read_text())
    assert sorted(manifest) == ["runs/a/last.ckpt", "runs/b/last.ckpt"]
    assert (tmp_path / "carried/runs/a/last.ckpt").read_bytes() == b"a, epoch 2"
    assert manifest["runs/a/last.ckpt"]["sha256"] == carry.sha256(tmp_path / "runs/a/last.ckpt")
    assert (tmp_path / "carried/runs/b/last.ckpt").read_bytes() == b"b"


def test_only_run_state_is_carried_and_a_corrupt_copy_is_refused(tmp_path, carry):
    write(tmp_path / "README.md", b"not a run")
    with pytest.raises(SystemExit, match="not inside"):
        carry.save(tmp_path, ["README.md"])
    write(tmp_path / "runs/a/last.ckpt", b"a")
    carry.save(tmp_path, ["runs/a/last.ckpt"])
    (tmp_path / "runs/a/last.ckpt").unlink()
    write(tmp_path / "carried/runs/a/last.ckpt", b"changed in transit")
    with pytest.raises(SystemExit, match="sha256"):
        carry.restore(tmp_path)


def test_a_carried_folder_zoo_did_not_write_is_left_alone(tmp_path, carry):
    write(tmp_path / "carried/notes.txt", b"someone's own folder")
    write(tmp_path / "runs/a/last.ckpt", b"a")
    with pytest.raises(SystemExit, match="did not write"):
        carry.save(tmp_path, ["runs/a/last.ckpt"])
    assert (tmp_path / "carried/notes.txt").read_bytes() == b"someone's own folder"


def test_git_commits_what_is_carried_and_ignores_runs():
    """carried/runs/... must not fall under the ignore rule for runs/ (it did, once: nothing but
    the manifest was committed)."""
    import subprocess

    repo = TOOL.parent.parent
    if not (repo / ".git").exists():
        pytest.skip("not a git checkout")
    ignored = subprocess.run(["git", "check-ignore", "carried/runs/blocks/x/last.ckpt", "runs/blocks/x/last.ckpt"],
                             cwd=repo, capture_output=True, text=True).stdout.split()
    assert ignored == ["runs/blocks/x/last.ckpt"]
