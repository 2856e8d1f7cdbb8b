"""One W&B run per run directory: the first leg, its resumes and extensions log into one W&B run
whose config is the recipe, and a rerun of a finished run starts none. Read here from the offline
run folders W&B writes under ``run_dir/wandb`` (``offline-run-<time>-<id>``)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from test_run_directory import BANDIT, BLOCKS_TINY, blocks_recipe, corpus_dir, starspace  # noqa: F401 (a fixture)

from zoo.run_directory import RunDirectory, RunDirectoryError
from zoo.wandb_run import RUN_ID_NAME, wandb_run_id

WANDB_TINY = [*(arg for arg in BLOCKS_TINY if not arg.startswith("logger.kind=")), "logger.kind=wandb"]
LONGER = ["trainer.max_epochs=2", "resume.allow_changed=[trainer.max_epochs]"]


def wandb_records(path: Path):
    """The records of W&B's transaction log (``run-<id>.wandb``): blocks of 32 KiB after a 7-byte
    header, each record a 7-byte header (checksum, length, whole/first/middle/last) and its bytes."""
    from wandb.proto import wandb_internal_pb2

    data, position, pending = path.read_bytes(), 7, b""
    assert data[:4] == b":W&B"
    while position + 7 <= len(data):
        if 32768 - position % 32768 < 7:  # a block's tail too short for a header is padding
            position += 32768 - position % 32768
            continue
        length, kind = struct.unpack("<HB", data[position + 4:position + 7])
        pending += data[position + 7:position + 7 + length]
        position += 7 + length
        if kind in (1, 4):  # a whole record, or the last piece of one
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            pending = b""
            yield record


def offline_runs(run_dir: Path) -> list[dict]:
    """Each offline W&B run folder under ``run_dir``: its id (from its name), group and config."""
    runs = []
    for folder in sorted((run_dir / "wandb").glob("offline-run-*")):
        (log,) = folder.glob("run-*.wandb")
        run = next(record.run for record in wandb_records(log) if record.WhichOneof("record_type") == "run")
        config = {item.key: json.loads(item.value_json) for item in run.config.update if item.key != "_wandb"}
        runs.append({"id": folder.name.split("-", 3)[3], "group": run.run_group, "config": config})
    return runs


@pytest.fixture
def offline(monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.delenv("WANDB_API_KEY", raising=False)


@pytest.mark.slow
def test_a_run_its_no_op_rerun_and_its_extension_make_one_wandb_run_whose_config_is_the_recipe(tmp_path, offline,
                                                                                              monkeypatch):
    recipe, run_dir = blocks_recipe(), tmp_path / "r"
    run = [*WANDB_TINY, "model.name=blocks-supervised", f"run_dir={run_dir}"]
    assert recipe.main(run) == 0
    (first,) = offline_runs(run_dir)
    assert first["id"] == (run_dir / RUN_ID_NAME).read_text().strip() == first["group"]
    assert first["config"]["trainer"]["max_epochs"] == 1 and first["config"]["model"]["name"] == "blocks-supervised"
    assert first["config"]["data"]["procedural_sizes"] == {"train": 6, "dev": 2, "test": 2}
    assert "run_dir" not in first["config"] and "resume" not in first["config"]  # the identity, as config.yaml

    assert recipe.main(run) == 0  # finished: trains nothing, starts no W&B run
    assert len(offline_runs(run_dir)) == 1
    with monkeypatch.context() as patched:  # nor when the rerun gets as far as the trainer
        patched.setattr(RunDirectory, "finished_results", lambda self: None)
        assert recipe.main(run) == 0
    assert len(offline_runs(run_dir)) == 1

    assert recipe.main([*run, *LONGER]) == 0
    legs = offline_runs(run_dir)
    assert [leg["id"] for leg in legs] == [first["id"]] * 2  # the extension resumes the same W&B run
    assert legs[1]["config"]["trainer"]["max_epochs"] == 2


@pytest.mark.slow
def test_the_warmup_logs_into_a_wandb_run_of_its_own_in_the_runs_group(tmp_path, offline):
    run_dir = tmp_path / "bandit"
    assert blocks_recipe().main([*WANDB_TINY, *BANDIT, f"run_dir={run_dir}"]) == 0
    run_id = (run_dir / RUN_ID_NAME).read_text().strip()
    (warmup,), (objective,) = offline_runs(run_dir / "warmup"), offline_runs(run_dir)
    assert (warmup["id"], warmup["group"]) == (f"{run_id}-warmup", run_id)
    assert (objective["id"], objective["group"]) == (run_id, run_id)


@pytest.mark.slow
def test_a_light_run_logs_training_validation_and_test_into_one_wandb_run(tmp_path, offline, corpus_dir):
    run_dir = tmp_path / "starspace"
    for _ in range(2):  # the second finds the run finished
        starspace(corpus_dir, run_dir, "logger.kind=wandb")
    (run,) = offline_runs(run_dir)
    assert run["config"]["model"]["name"] == "light-starspace" and run["config"]["data"]["task"] == "dialogue"
    (log,) = (run_dir / "wandb").glob("offline-run-*/run-*.wandb")
    logged = {item.key or "/".join(item.nested_key) for record in wandb_records(log)
              if record.WhichOneof("record_type") == "history" for item in record.history.item}
    assert {"train/loss", "valid/r_at_1", "test/r_at_1"} <= logged


def test_the_wandb_id_is_drawn_once_and_a_file_zoo_did_not_write_is_refused(tmp_path):
    drawn = wandb_run_id(tmp_path)
    assert wandb_run_id(tmp_path) == drawn and wandb_run_id(tmp_path / "elsewhere", write=False) is None
    (tmp_path / RUN_ID_NAME).write_text("my notes\n")
    with pytest.raises(RunDirectoryError, match="holds no W&B run id zoo wrote") as refused:
        wandb_run_id(tmp_path)
    assert "\n" not in str(refused.value)
    (tmp_path / RUN_ID_NAME).unlink()
    (tmp_path / RUN_ID_NAME).symlink_to(tmp_path / "target")
    with pytest.raises(RunDirectoryError, match="a link or a folder"):
        wandb_run_id(tmp_path)
    assert not (tmp_path / "target").exists()
