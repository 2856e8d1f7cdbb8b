"""A run directory holds against crafted contents: a path read back from a checkpoint, a
marker or a record never sends zoo's deletions or writes outside the run, and a folder zoo did
not make (or one that is part of another run) is never taken as a run."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

from test_run_directory import BLOCKS_TINY, BANDIT, blocks_recipe, config, snapshot
from zoo.callbacks.run_model_checkpoint import CheckpointStateError, RunModelCheckpoint, check_inside, own_checkpoint
from zoo.checkpoint_io import AtomicCheckpointIO
from zoo.safe_writes import MARKER_NAME
from zoo.run_directory import (
    CHANGES_NAME,
    HOLDER_NAME,
    LOCK_NAME,
    RunDirectory,
    RunDirectoryError,
    read_changes,
)

SUPERVISED = [*BLOCKS_TINY, "model.name=blocks-supervised"]
LONGER = ["trainer.max_epochs=2", "resume.allow_changed=[trainer.max_epochs]"]


def a_victim(where: Path) -> Path:
    """A user's folder with a file in it, beside the run."""
    where.mkdir(parents=True)
    (where / "precious.txt").write_text("mine")
    return where


def craft_best_paths(last: Path, path: str) -> None:
    """Rewrite ``last.ckpt`` so that every checkpoint callback remembers ``path`` as its best
    and k-th best checkpoint, with a score any new epoch beats."""
    checkpoint = torch.load(last, weights_only=True)
    for key, state in checkpoint["callbacks"].items():
        if key.startswith("ModelCheckpoint"):
            state.update(best_model_path=path, kth_best_model_path=path, best_k_models={path: torch.tensor(1e9)},
                         best_model_score=torch.tensor(1e9), kth_value=torch.tensor(1e9))
    torch.save(checkpoint, last)


# ---- what a checkpoint callback may delete


def test_only_a_checkpoint_file_directly_in_the_folder_is_the_callbacks_own(tmp_path):
    folder = tmp_path / "run" / "checkpoints"
    folder.mkdir(parents=True)
    (folder / "epoch000.ckpt").write_bytes(b"x")
    (tmp_path / "outside.ckpt").write_bytes(b"x")
    (folder / "linked.ckpt").symlink_to(tmp_path / "outside.ckpt")
    (folder / "folder.ckpt").mkdir()
    assert own_checkpoint(str(folder / "epoch000.ckpt"), str(folder))
    assert own_checkpoint(str(folder / "not-yet-written.ckpt"), str(folder))
    assert own_checkpoint(str(folder / "sub" / ".." / "epoch000.ckpt"), str(folder))  # resolves inside
    for foreign in (folder / ".." / ".." / "outside.ckpt", folder / "linked.ckpt", folder / "folder.ckpt",
                    folder / ".." / ".." / "victim", folder / "a" / "b" / "..", tmp_path / "outside.ckpt"):
        assert not own_checkpoint(str(foreign), str(folder)), foreign


def test_a_state_naming_a_path_outside_the_run_is_refused_in_one_line(tmp_path):
    folder = str(tmp_path / "checkpoints")
    good = {"best_model_path": f"{folder}/best-epoch001.ckpt", "kth_best_model_path": "", "last_model_path": "",
            "best_k_models": {f"{folder}/best-epoch001.ckpt": 0.5}}
    check_inside(good, folder)
    for key, value in (("best_model_path", f"{folder}/../../victim"), ("kth_best_model_path", str(tmp_path)),
                       ("best_k_models", {f"{folder}/../victim.ckpt": 1e9}), ("best_k_models", [1])):
        with pytest.raises(CheckpointStateError, match="use a new run_dir") as refused:
            check_inside({**good, key: value}, folder)
        assert "\n" not in str(refused.value)


def test_the_checkpoint_io_never_removes_a_folder_or_follows_a_link(tmp_path):
    victim = a_victim(tmp_path / "victim")
    (tmp_path / "link.ckpt").symlink_to(victim / "precious.txt")
    io = AtomicCheckpointIO()
    io.remove_checkpoint(victim)
    io.remove_checkpoint(tmp_path / "link.ckpt")
    assert (victim / "precious.txt").read_text() == "mine" and (tmp_path / "link.ckpt").is_symlink()
    (tmp_path / "epoch000.ckpt").write_bytes(b"x")
    io.remove_checkpoint(tmp_path / "epoch000.ckpt")
    assert not (tmp_path / "epoch000.ckpt").exists()


def test_the_callback_keeps_a_foreign_path_even_when_its_state_was_not_checked(tmp_path):
    victim = a_victim(tmp_path / "victim")
    callback = RunModelCheckpoint(dirpath=tmp_path / "run" / "checkpoints")

    class RankZero:
        is_global_zero = True

    with pytest.warns(UserWarning, match="not deleting"):
        callback._remove_checkpoint(RankZero(), str(tmp_path / "run" / "checkpoints" / ".." / ".." / "victim"))
    assert (victim / "precious.txt").read_text() == "mine"


# ---- a crafted last.ckpt in a real run


def a_crafted_run(tmp_path: Path, crafted: str):
    """A finished tiny run beside a user's folder, its last.ckpt rewritten to remember
    ``checkpoints/<crafted>`` as its best checkpoints: (the recipe, the run, the user's folder)."""
    recipe = blocks_recipe()
    run_dir = tmp_path / "r"
    victim = a_victim(tmp_path / "victim")
    recipe.main([*SUPERVISED, f"run_dir={run_dir}"])
    craft_best_paths(run_dir / "checkpoints" / "last.ckpt", f"{run_dir}/checkpoints/{crafted}")
    return recipe, run_dir, victim


@pytest.mark.slow
@pytest.mark.parametrize("crafted", ["../../victim", "../../victim/a/b/..", "a/b/.."])
def test_a_crafted_last_checkpoint_deletes_nothing_and_is_refused_before_training(tmp_path, crafted):
    recipe, run_dir, victim = a_crafted_run(tmp_path, crafted)
    before = snapshot(run_dir)
    with pytest.raises(SystemExit, match="refusing to resume: the run's last.ckpt names") as refused:
        recipe.main([*SUPERVISED, f"run_dir={run_dir}", *LONGER])
    assert "\n" not in str(refused.value)
    assert (victim / "precious.txt").read_text() == "mine"
    assert {name: data for name, data in snapshot(run_dir).items() if name != CHANGES_NAME} == before


@pytest.mark.slow
def test_with_the_state_check_gone_the_deletion_still_spares_the_victim(tmp_path, monkeypatch):
    import zoo.callbacks.run_model_checkpoint as module

    recipe, run_dir, victim = a_crafted_run(tmp_path, "../../victim")
    monkeypatch.setattr(module, "check_inside", lambda state, directory: None)
    with pytest.warns(UserWarning, match="not deleting"):
        try:
            recipe.main([*SUPERVISED, f"run_dir={run_dir}", *LONGER])
        except SystemExit:
            pass  # loading the crafted best path is refused too: what matters is what was deleted
    assert (victim / "precious.txt").read_text() == "mine"


# ---- folders that are not this run


@pytest.mark.slow
def test_a_warmup_folder_is_not_a_run_directory(tmp_path):
    recipe = blocks_recipe()
    run_dir = tmp_path / "bandit"
    recipe.main([*BLOCKS_TINY, *BANDIT, f"run_dir={run_dir}"])
    before = snapshot(run_dir)
    with pytest.raises(SystemExit, match="is a stage inside another run") as refused:
        recipe.main([*BLOCKS_TINY, *BANDIT, f"run_dir={run_dir / 'warmup'}"])
    assert "\n" not in str(refused.value) and snapshot(run_dir) == before


def test_a_stage_marked_by_older_zoo_is_not_a_run_directory(tmp_path):
    stage = tmp_path / "run" / "warmup"
    stage.mkdir(parents=True)
    (stage / MARKER_NAME).write_text(json.dumps({"written_by": "zoo", "kind": "run", "config_sha256": "a" * 64}))
    with pytest.raises(RunDirectoryError, match="is a stage inside another run"):
        RunDirectory.open(config(stage))


@pytest.mark.parametrize("entry", ["checkpoints", "pretrained", "warmup", "metrics.jsonl", "config.yaml"])
def test_a_link_inside_the_run_is_refused_before_anything_is_written(tmp_path, entry):
    users = a_victim(tmp_path / "users")
    run_dir = tmp_path / "run"
    with RunDirectory.open(config(run_dir)):
        pass
    (run_dir / entry).unlink() if (run_dir / entry).is_file() else None
    (run_dir / entry).symlink_to(users)
    before = snapshot(run_dir)
    with pytest.raises(RunDirectoryError, match="is a link, and zoo writes and deletes there"):
        RunDirectory.open(config(run_dir))
    assert snapshot(run_dir) == before and sorted(os.listdir(users)) == ["precious.txt"]


def test_a_lock_file_that_is_a_link_is_refused_and_its_target_untouched(tmp_path):
    victim = a_victim(tmp_path / "victim")
    run_dir = tmp_path / "run"
    with RunDirectory.open(config(run_dir)):
        pass
    (run_dir / LOCK_NAME).unlink(missing_ok=True)
    (run_dir / LOCK_NAME).symlink_to(victim / "precious.txt")
    with pytest.raises(RunDirectoryError, match="not a lock file zoo made"):
        RunDirectory.open(config(run_dir))
    assert (victim / "precious.txt").read_text() == "mine"
    (run_dir / LOCK_NAME).unlink()
    (run_dir / LOCK_NAME).symlink_to(run_dir / LOCK_NAME)  # a loop
    with pytest.raises(RunDirectoryError, match="not a lock file zoo made"):
        RunDirectory.open(config(run_dir))


def test_a_read_only_place_is_one_line_before_anything_is_written(tmp_path, monkeypatch):
    real_access = os.access
    locked = tmp_path / "locked"
    locked.mkdir()
    monkeypatch.setattr(os, "access", lambda path, mode: False if Path(path) == locked else real_access(path, mode))
    with pytest.raises(RunDirectoryError, match="is not writable"):
        RunDirectory.open(config(locked / "run"))
    with pytest.raises(RunDirectoryError, match="locked': it is not writable"):
        RunDirectory.open(config(locked))
    assert os.listdir(locked) == []


def test_a_write_that_fails_while_taking_the_run_is_one_line(tmp_path, monkeypatch):
    import zoo.safe_writes

    def refused(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(zoo.safe_writes, "write_marker", refused)
    with pytest.raises(RunDirectoryError, match="cannot write to run_dir .*: Permission denied"):
        RunDirectory.open(config(tmp_path / "run"))


# ---- records read back


def test_a_corrupt_changes_file_is_refused_naming_its_line(tmp_path):
    (tmp_path / CHANGES_NAME).write_text('{"changes": []}\n{"changes": [{"key": "trainer.max_epochs", "old": 1}]}\n')
    with pytest.raises(RunDirectoryError, match="changes.jsonl line 2 is not a change zoo recorded"):
        read_changes(tmp_path)
    (tmp_path / CHANGES_NAME).write_text("not json\n")
    with pytest.raises(RunDirectoryError, match="line 1"):
        read_changes(tmp_path)


def test_a_holder_that_was_killed_is_named_when_the_next_run_takes_over(tmp_path, caplog):
    run_dir = tmp_path / "run"
    with RunDirectory.open(config(run_dir)):
        assert (run_dir / HOLDER_NAME).is_file()
    assert not (run_dir / HOLDER_NAME).exists()  # closed: no record left behind
    (run_dir / HOLDER_NAME).write_text(json.dumps({"pid": 4242, "host": "node7", "started": "2026-01-01T00:00:00Z"}))
    with caplog.at_level("WARNING"), RunDirectory.open(config(run_dir)):
        pass
    assert "last held by pid 4242 on node7 (started 2026-01-01T00:00:00Z), which ended without closing it" in caplog.text


@pytest.mark.slow
def test_a_blocks_run_writes_results_with_its_legs_and_allowed_changes(tmp_path):
    recipe = blocks_recipe()
    run_dir = tmp_path / "r"
    recipe.main([*SUPERVISED, f"run_dir={run_dir}"])
    first = json.loads((run_dir / "results.json").read_text())
    assert first["model"] == "blocks-supervised" and [(leg["from_step"], leg["to_step"]) for leg in first["legs"]] == [(0, 6)]
    assert first["metrics"]["tuning/mean_error"] > 0 and first["exported_epoch"] == 0
    recipe.main([*SUPERVISED, f"run_dir={run_dir}", *LONGER])
    longer = json.loads((run_dir / "results.json").read_text())
    assert [leg["allowed_changes"] for leg in longer["legs"]] == [[], [{"key": "trainer.max_epochs", "old": 1, "new": 2}]]
    assert longer["config_sha256"] == first["config_sha256"] and longer["global_step"] == 12
    saved = torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=True)
    legs = next(state for key, state in saved["callbacks"].items() if key.startswith("RunLegs"))["legs"]
    assert legs[1]["allowed_changes"] == [{"key": "trainer.max_epochs", "old": 1, "new": 2}]


def test_a_read_only_save_target_is_refused_before_the_evaluation(tmp_path, monkeypatch, capsys):
    from zoo.cli import main

    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: False if Path(path) == tmp_path else real_access(path, mode))
    evaluated = []
    import zoo.blocks.evaluate

    monkeypatch.setattr(zoo.blocks.evaluate, "evaluate_policy", lambda *a, **k: evaluated.append(1))
    with pytest.raises(SystemExit) as refused:
        main(["eval", "blocks", "--model", "stop", "--procedural", "--limit", "2", "--save", str(tmp_path / "saved")])
    assert refused.value.code == 2 and not evaluated
    assert f"{str(tmp_path)!r} is not writable" in capsys.readouterr().err
