"""A run directory holds one run: its config.yaml is its identity, one process writes it at a
time, and a rerun with another configuration is refused in one line before anything is written."""

from __future__ import annotations

import errno
import importlib.util
import json
import os
import shutil
import signal
from pathlib import Path

import lightning as L
import pytest
import torch
from omegaconf import OmegaConf

from zoo.callbacks.run_legs import RunLegs, totals
from zoo.callbacks.run_model_checkpoint import moved
from zoo.checkpoint_io import AtomicCheckpointIO, CheckpointWriteError
from zoo.experiment import load_config
from zoo.recipes import recipe_files
from zoo.safe_writes import MARKER_NAME, marker_record
from zoo.run_directory import (
    CONFIG_NAME,
    SAFE_TO_CHANGE,
    ConfigChangedError,
    RunDirectory,
    RunDirectoryError,
    RunInUseError,
    StageMismatchError,
    config_sha256,
    identity,
    take_stage,
)

REPO = Path(__file__).resolve().parent.parent
BLOCKS_TINY = ["data.source=procedural", "data.procedural_sizes={train: 6, dev: 2, test: 2}",
               "model.options.embedding_dim=8", "model.options.lstm_dim=8", "model.options.image_dim=8",
               "model.options.conv_channels=4", "model.options.block_embedding_dim=4",
               "model.options.direction_embedding_dim=4", "model.options.hidden_dim=8", "evaluation.gifs=0",
               "logger.kind=none", "trainer.max_epochs=1", "trainer.enable_progress_bar=false", "threads=1",
               "data.episodes_per_batch=4"]
BANDIT = ["model.name=blocks-bandit", "start.warmup_epochs=1"]


def config(run_dir, **changes):
    """A small configuration; ``model__lr=0.5`` sets ``model.lr``."""
    node = OmegaConf.create({"seed": 0, "run_dir": str(run_dir), "model": {"hidden_dim": 120, "lr": 0.001},
                             "trainer": {"max_epochs": 1, "devices": 1}, "threads": None,
                             "resume": {"allow_changed": []}})
    for key, value in changes.items():
        OmegaConf.update(node, key.replace("__", "."), value, merge=False)
    return node


def blocks_recipe():
    spec = importlib.util.spec_from_file_location("blocks_policy_recipe", REPO / "recipes" / "blocks_policy.py")
    recipe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recipe)
    return recipe


def test_the_identity_leaves_out_where_the_run_is_and_how_it_resumes(tmp_path):
    assert set(identity(config(tmp_path))) == {"seed", "model", "trainer", "threads"}
    assert config_sha256(identity(config(tmp_path))) == config_sha256(identity(config(tmp_path / "moved")))
    assert config_sha256(identity(config(tmp_path))) != config_sha256(identity(config(tmp_path, seed=1)))


def test_a_new_run_writes_its_config_once_and_the_same_config_resumes(tmp_path):
    run_dir = tmp_path / "run"
    with RunDirectory.open(config(run_dir)) as run:
        assert run.changes == [] and len(run.sha256) == 64
    assert marker_record(run_dir)["kind"] == "run"
    written = (run_dir / CONFIG_NAME).read_text()
    (run_dir / "checkpoints").mkdir()  # the run has made something from its configuration
    with RunDirectory.open(config(run_dir)) as again:
        assert again.sha256 == run.sha256
    assert (run_dir / CONFIG_NAME).read_text() == written


def test_another_configuration_is_refused_in_one_line_before_anything_is_written(tmp_path):
    run_dir = tmp_path / "run"
    RunDirectory.open(config(run_dir)).close()
    (run_dir / "checkpoints").mkdir()
    before = {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()}
    with pytest.raises(ConfigChangedError) as refused:
        RunDirectory.open(config(run_dir, model__hidden_dim=60, model__lr=0.5))
    message = str(refused.value)
    assert "\n" not in message
    assert "model.hidden_dim: 120 -> 60" in message and "model.lr: 0.001 -> 0.5" in message
    assert "use a new run_dir" in message and "allow_changed" not in message  # neither key may change
    assert {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()} == before


def test_a_safe_key_may_change_when_allowed_and_the_change_is_recorded(tmp_path):
    run_dir = tmp_path / "run"
    RunDirectory.open(config(run_dir)).close()
    (run_dir / "checkpoints").mkdir()
    with pytest.raises(ConfigChangedError, match=r"trainer.max_epochs: 1 -> 3.*resume.allow_changed=\[trainer.max_epochs\]"):
        RunDirectory.open(config(run_dir, trainer__max_epochs=3))
    with RunDirectory.open(config(run_dir, trainer__max_epochs=3, resume__allow_changed=["trainer.max_epochs"])) as run:
        assert [(c.key, c.old, c.new) for c in run.changes] == [("trainer.max_epochs", 1, 3)]
    assert OmegaConf.load(run_dir / CONFIG_NAME).trainer.max_epochs == 1  # the original identity
    with RunDirectory.open(config(run_dir, trainer__max_epochs=3)) as again:  # the run's configuration now
        assert again.changes == [] and again.sha256 == run.sha256
    with pytest.raises(RunDirectoryError, match="model.lr cannot change in a resumed run"):
        RunDirectory.open(config(run_dir, model__lr=0.5, resume__allow_changed=["model.lr"]))
    assert "trainer.devices" not in SAFE_TO_CHANGE and "seed" not in SAFE_TO_CHANGE


def test_a_run_that_made_nothing_yet_takes_a_corrected_configuration(tmp_path):
    run_dir = tmp_path / "run"
    RunDirectory.open(config(run_dir, seed=5)).close()  # e.g. stopped on a bad data setting
    with RunDirectory.open(config(run_dir, seed=6)):
        pass
    assert OmegaConf.load(run_dir / CONFIG_NAME).seed == 6


def test_one_process_at_a_time_and_the_refusal_names_the_holder(tmp_path):
    run_dir = tmp_path / "run"
    with RunDirectory.open(config(run_dir)):
        with pytest.raises(RunInUseError, match=rf"in use by pid {os.getpid()} on \S+ \(started 20"):
            RunDirectory.open(config(run_dir))
        worker = RunDirectory.open(config(run_dir), rank=1)  # a DDP worker neither waits nor writes
        assert not worker.writer and worker._lock is None
    RunDirectory.open(config(run_dir)).close()  # released


def test_another_configuration_started_while_the_run_is_writing_names_the_holder(tmp_path):
    """Two recipes started together: the second sees the first's config, but the better reason
    to give is the live holder, and the refusal writes nothing."""
    run_dir = tmp_path / "run"
    with RunDirectory.open(config(run_dir, seed=1)):
        (run_dir / "checkpoints").mkdir()
        before = {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()}
        with pytest.raises(RunInUseError, match=rf"in use by pid {os.getpid()} on \S+ \(started 20"):
            RunDirectory.open(config(run_dir, seed=2))
        assert {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()} == before
    with pytest.raises(ConfigChangedError, match=r"seed: 1 -> 2"):  # released: the configuration is the reason
        RunDirectory.open(config(run_dir, seed=2))


@pytest.mark.parametrize("where", ["users_folder", "working_directory", "empty", "file"])
def test_a_folder_zoo_did_not_make_a_run_is_refused_untouched(tmp_path, monkeypatch, where):
    target = tmp_path / "mine"
    target.mkdir()
    (target / CONFIG_NAME).write_text("my: own\n")
    if where == "working_directory":
        monkeypatch.chdir(target)
        target = Path(".")
    if where == "file":
        target = target / CONFIG_NAME
    run_dir = "" if where == "empty" else str(target)
    with pytest.raises(RunDirectoryError) as refused:
        RunDirectory.open(OmegaConf.create({"seed": 0, "run_dir": run_dir}))
    assert "\n" not in str(refused.value)
    assert (tmp_path / "mine" / CONFIG_NAME).read_text() == "my: own\n"
    assert not (tmp_path / "mine" / MARKER_NAME).exists()


def test_a_stage_is_reused_only_by_the_configuration_that_made_it(tmp_path):
    stage = tmp_path / "run" / "warmup"
    take_stage(stage, "a" * 64, "the warm-up")
    take_stage(stage, "a" * 64, "the warm-up")
    with pytest.raises(StageMismatchError, match="the warm-up .* another configuration"):
        take_stage(stage, "b" * 64, "the warm-up")


def test_the_blocks_warmup_identity_changes_with_seed_and_sizes_not_with_the_bandit():
    from zoo.experiment import load_config
    from zoo.recipes import recipe_files
    from zoo.training.blocks import warmup_sha256

    def sha(*overrides, recipe="blocks-bandit"):
        return warmup_sha256(load_config(recipe_files(recipe), list(overrides)))

    base = sha()
    assert sha("seed=1") != base and sha("model.options.hidden_dim=60") != base and sha("start.warmup_epochs=3") != base
    assert sha("start.warmup_learning_rate=0.5") != base
    assert sha("model.options.reward=distance") == base and sha("trainer.max_epochs=40") == base \
        and sha(recipe="blocks-reinforce") == base


def test_legs_add_up_to_the_run():
    legs = [{"from_step": 0, "to_step": 8, "world_size": 1, "batch_size": 64, "accumulate_grad_batches": 1,
             "seconds": 10.0}, {"from_step": 8, "to_step": 12, "world_size": 1, "batch_size": 64,
                                "accumulate_grad_batches": 2, "seconds": 5.25}]
    assert totals(legs) == {"train_seconds": 15.2, "examples_seen": 8 * 64 + 4 * 2 * 64}
    restored = RunLegs(64)
    restored.load_state_dict({"legs": legs})
    assert restored.legs == legs and not restored.trained_here


def test_best_checkpoint_paths_follow_a_moved_run_folder():
    state = {"dirpath": "/old/run/checkpoints", "best_model_path": "/old/run/checkpoints/best-epoch001.ckpt",
             "best_k_models": {"/old/run/checkpoints/best-epoch001.ckpt": 0.5}, "last_model_path": "/elsewhere/x.ckpt"}
    new = moved(state, "/old/run/checkpoints", "/new/place/checkpoints")
    assert new["best_model_path"] == "/new/place/checkpoints/best-epoch001.ckpt"
    assert list(new["best_k_models"]) == ["/new/place/checkpoints/best-epoch001.ckpt"]
    assert new["last_model_path"] == "/elsewhere/x.ckpt"  # not the run's: load_run_checkpoint refuses it


def test_a_checkpoint_that_cannot_be_written_is_one_line_and_leaves_the_previous_whole(tmp_path, monkeypatch):
    path = tmp_path / "checkpoints" / "last.ckpt"
    io = AtomicCheckpointIO()
    io.save_checkpoint({"step": 1}, path)
    assert torch.load(path, weights_only=True) == {"step": 1}

    def full(obj, stream, *args, **kwargs):
        stream.write(b"x" * 1000)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(torch, "save", full)
    with pytest.raises(CheckpointWriteError, match="No space left on device; the previous checkpoints are intact"):
        io.save_checkpoint({"step": 2}, path)
    monkeypatch.undo()
    assert torch.load(path, weights_only=True) == {"step": 1}
    assert sorted(p.name for p in path.parent.iterdir()) == ["last.ckpt"]


# ---- the recipes


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory):
    from zoo.cli import main

    out = tmp_path_factory.mktemp("light") / "tiny"
    assert main(["light", "sim", "--out", str(out), "--preset", "tiny", "--world", "authored"]) == 0
    return out


def starspace(corpus_dir, run_dir, *extra):
    from zoo.training.runner import run

    return run("light-starspace", [
        f"data.sim_dir={corpus_dir}", "data.task=dialogue", f"run_dir={run_dir}", "logger.kind=none", "threads=1",
        "trainer.max_epochs=1", "data.batch_size=64", "model.options.dim=16", "model.options.min_count=1",
        "model.options.world=authored", "data.limit={train: 256, valid: 32, test: 32, test_unseen: 32}",
        *extra]).results


def snapshot(run_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in sorted(run_dir.rglob("*"))
            if p.is_file() and p.name not in (".zoo-run.holder.json",)}


@pytest.mark.slow
def test_light_rerun_with_other_options_or_devices_is_refused_and_the_run_is_untouched(corpus_dir, tmp_path):
    run_dir = tmp_path / "starspace"
    results = starspace(corpus_dir, run_dir)
    assert results["config_sha256"] == marker_record(run_dir / "pretrained")["config_sha256"]
    assert [(leg["from_step"], leg["to_step"]) for leg in results["legs"]] == [(0, 4)]
    assert results["examples_seen"] == 4 * 64
    before = snapshot(run_dir)
    for changed, named in ((["model.options.margin=0.1", "model.options.learning_rate=0.5", "data.batch_size=16"],
                            "data.batch_size: 64 -> 16; model.options.learning_rate: "),
                           (["trainer.devices=2", "trainer.strategy=ddp"],
                            'trainer.devices: 1 -> 2; trainer.strategy: "auto" -> "ddp"')):
        with pytest.raises(SystemExit) as refused:
            starspace(corpus_dir, run_dir, *changed)
        assert "\n" not in str(refused.value) and named in str(refused.value)
        assert snapshot(run_dir) == before


@pytest.mark.slow
def test_light_rerun_of_a_finished_run_reports_it_unchanged_and_an_allowed_extension_adds_a_leg(corpus_dir, tmp_path):
    run_dir = tmp_path / "starspace"
    first = starspace(corpus_dir, run_dir)
    before = snapshot(run_dir)
    assert starspace(corpus_dir, run_dir) == json.loads((run_dir / "results.json").read_text())
    assert snapshot(run_dir) == before  # nothing re-tested, re-exported or re-reported
    longer = starspace(corpus_dir, run_dir, "trainer.max_epochs=2", "resume.allow_changed=[trainer.max_epochs]")
    assert [(leg["from_step"], leg["to_step"]) for leg in longer["legs"]] == [(0, 4), (4, 8)]
    assert longer["legs"][1]["allowed_changes"] == [{"key": "trainer.max_epochs", "old": 1, "new": 2}]
    assert longer["examples_seen"] == 8 * 64 and longer["global_step"] == 8
    assert longer["train_seconds"] >= first["train_seconds"]
    assert longer["config_sha256"] == first["config_sha256"]


@pytest.mark.slow
def test_blocks_resumed_with_another_reward_size_or_learning_rate_is_refused(tmp_path):
    recipe = blocks_recipe()
    run_dir = tmp_path / "bandit"
    recipe.main([*BLOCKS_TINY, *BANDIT, f"run_dir={run_dir}"])
    assert marker_record(run_dir / "warmup")["config_sha256"] == marker_record(run_dir / "warmup" / "pretrained")["config_sha256"]
    before = snapshot(run_dir)
    for changed in (["model.options.reward=distance", "model.options.hidden_dim=60"], ["start.warmup_learning_rate=0.5"],
                    ["seed=3"]):
        with pytest.raises(SystemExit, match="another configuration") as refused:
            recipe.main([*BLOCKS_TINY, *BANDIT, f"run_dir={run_dir}", *changed])
        assert "\n" not in str(refused.value)
    assert snapshot(run_dir) == before
    os.unlink(run_dir / "checkpoints" / "last.ckpt")  # the bandit's own state gone: the warm-up is still this config's
    (run_dir / "warmup" / MARKER_NAME).write_text(json.dumps({"written_by": "zoo", "kind": "run",
                                                              "config_sha256": "0" * 64}))
    with pytest.raises(SystemExit, match="the supervised warm-up .* another configuration"):
        recipe.main([*BLOCKS_TINY, *BANDIT, f"run_dir={run_dir}"])


@pytest.mark.slow
def test_a_moved_run_folder_resumes_and_exports_from_its_new_place(tmp_path):
    recipe = blocks_recipe()
    first, second = tmp_path / "first", tmp_path / "elsewhere" / "second"
    recipe.main([*BLOCKS_TINY, "model.name=blocks-supervised", f"run_dir={first}"])
    second.parent.mkdir()
    shutil.move(first, second)
    recipe.main([*BLOCKS_TINY, "model.name=blocks-supervised", "trainer.max_epochs=2", "resume.allow_changed=[trainer.max_epochs]",
                 f"run_dir={second}"])
    assert (second / "checkpoints" / "epoch001.ckpt").is_file() and not first.exists()
    best = torch.load(second / "checkpoints" / "last.ckpt", weights_only=True)["callbacks"]
    paths = [state["best_model_path"] for key, state in best.items() if key.startswith("ModelCheckpoint")]
    assert paths and all(Path(path).parent == second / "checkpoints" for path in paths if path)


def test_a_users_folder_that_looks_like_a_run_is_refused_untouched(tmp_path):
    users = tmp_path / "u"
    users.mkdir()
    (users / CONFIG_NAME).write_text("lr: 0.1\n")
    (users / "metrics.jsonl").write_text("{}\n")
    (users / "changes.jsonl").write_text('{"changes": []}\n')
    (users / "checkpoints").mkdir()
    before = snapshot(users)
    for wanted in (config(users), config(users, seed=1)):
        with pytest.raises(RunDirectoryError, match="zoo did not write it") as refused:
            RunDirectory.open(wanted)
        assert "\n" not in str(refused.value)
    assert snapshot(users) == before and not (users / MARKER_NAME).exists()


@pytest.mark.slow
def test_a_finished_run_is_rerun_without_loading_data_but_a_cut_extension_goes_on(tmp_path, monkeypatch):
    import zoo.training.blocks as runner

    recipe = blocks_recipe()
    run_dir = tmp_path / "r"
    supervised = [*BLOCKS_TINY, "model.name=blocks-supervised", f"run_dir={run_dir}"]
    recipe.main(supervised)
    first = json.loads((run_dir / "results.json").read_text())
    assert first["settings_sha256"] and first["config_sha256"]

    def no_data(*args, **kwargs):
        raise AssertionError("a finished run loads no data")

    with monkeypatch.context() as patched:
        patched.setattr(runner, "make_datamodule", no_data)
        before = snapshot(run_dir)
        assert recipe.main(supervised) == 0
        assert snapshot(run_dir) == before
    # an extension recorded (changes.jsonl) but killed before it wrote its results: the rerun trains it
    longer = [*supervised, "trainer.max_epochs=2", "resume.allow_changed=[trainer.max_epochs]"]
    with RunDirectory.open(load_config(recipe_files("blocks-supervised"), longer)):
        pass
    assert recipe.main(longer) == 0
    extended = json.loads((run_dir / "results.json").read_text())
    assert extended["global_step"] == 12 and extended["settings_sha256"] != first["settings_sha256"]


class StopInEpoch(L.Callback):
    """SIGTERM to this process after the first batch of epoch ``epoch``: the run stops with a checkpoint there."""

    def __init__(self, epoch: int):
        self.epoch = epoch

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if trainer.current_epoch == self.epoch and batch_idx == 0:
            os.kill(os.getpid(), signal.SIGTERM)


def test_fewer_epochs_than_a_stopped_run_has_trained_is_one_line(tmp_path):
    recipe = blocks_recipe()
    run_dir = tmp_path / "r"
    trained = [*BLOCKS_TINY, "model.name=blocks-supervised", f"run_dir={run_dir}", "trainer.max_epochs=4"]
    with pytest.raises(SystemExit):
        recipe.main(trained, extra_callbacks=[StopInEpoch(2)])  # stopped in its third epoch
    shorter = [*trained, "trainer.max_epochs=1", "resume.allow_changed=[trainer.max_epochs]"]
    with pytest.raises(SystemExit, match=r"has trained past trainer.max_epochs=1: 2 epochs are done"):
        recipe.main(shorter)
