"""tools/blocks_seeds.py: each seed's best epoch by dev (the paper's rule), read from its metrics.jsonl."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parent.parent


def load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def seeds():
    return load("blocks_seeds", REPO / "tools" / "blocks_seeds.py")


def write_metrics(run_dir: Path, rows: list[dict]) -> None:
    run_dir.mkdir(parents=True)
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_the_best_epoch_is_the_lowest_dev_error_and_a_revalidated_epoch_counts_once(tmp_path, seeds):
    write_metrics(tmp_path / "bandit-s1", [
        {"epoch": 0, "step": 10, "train_seconds": 5.0, "tuning/mean_error": 4.2, "dev/mean_error": 4.1},
        {"epoch": 1, "step": 20, "train_seconds": 9.0, "tuning/mean_error": 4.0, "dev/mean_error": 3.7},
        {"epoch": 1, "step": 20, "train_seconds": 9.5, "tuning/mean_error": 4.0, "dev/mean_error": 3.9},  # resumed
        {"epoch": 2, "step": 30, "train_seconds": 14.0, "tuning/mean_error": 3.9, "dev/mean_error": 3.8},
    ])
    rows = seeds.collect(tmp_path, [1], None)
    assert [r["dev_mean"] for r in rows] == [4.1, 3.9, 3.8]  # the last line of epoch 1 stands
    assert seeds.best_by_dev(rows)[1]["epoch"] == 2  # by dev, although tuning prefers the same here


def test_rows_say_how_long_greedy_dev_episodes_ran(tmp_path, seeds):
    """Decisions per dev episode, from the two logged speeds: 40.0 means the policy never stopped."""
    write_metrics(tmp_path / "bandit-s1", [
        {"epoch": 0, "dev/mean_error": 4.3, "dev/min_mean_error": 3.6, "dev/steps_per_s": 1200.0,
         "dev/episodes_per_s": 30.0},
        {"epoch": 1, "dev/mean_error": 4.1},  # an older run's line without speeds
    ])
    rows = seeds.collect(tmp_path, [1], None)
    assert rows[0]["dev_decisions"] == 40.0 and rows[0]["dev_min_mean"] == 3.6
    assert rows[1]["dev_decisions"] is None and rows[1]["dev_min_mean"] is None


@pytest.mark.slow
def test_export_saves_the_best_dev_epochs_weights(tmp_path, seeds):
    training = load("blocks_training_tests", REPO / "tests" / "test_blocks_training.py")
    run_dir = tmp_path / "bandit"
    training.recipe().main([*training.tiny("bandit"), f"run_dir={run_dir}"])
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    best = min(rows, key=lambda r: r["dev/mean_error"])["epoch"]

    out = seeds.export(run_dir, None)

    from safetensors.torch import load_file
    exported = load_file(str(out / "model.safetensors"))
    epoch = torch.load(run_dir / "checkpoints" / f"epoch{best:03d}.ckpt", map_location="cpu", weights_only=True)
    for name, tensor in exported.items():
        torch.testing.assert_close(tensor, epoch["state_dict"][name], rtol=0, atol=0, msg=name)


def test_starts_pairs_each_seeds_supervised_run_with_and_without_the_previous_action(tmp_path, seeds):
    write_metrics(tmp_path / "sup-orig-s1", [{"epoch": 0, "dev/mean_error": 5.14}, {"epoch": 1, "dev/mean_error": 5.27}])
    write_metrics(tmp_path / "sup-orig-s1-noprev", [{"epoch": 0, "dev/mean_error": 4.91}])
    rows = seeds.collect_starts(tmp_path, [1, 2])  # seed 2 has no runs: nothing, not an error
    assert [(r["input"], r["epoch"], r["dev_mean"]) for r in rows] == [
        ("with the previous action", 0, 5.14), ("with the previous action", 1, 5.27), ("without it", 0, 4.91)]
    pytest.importorskip("matplotlib")
    seeds.plot_starts(rows, tmp_path / "starts.png")
    assert (tmp_path / "starts.png").read_bytes()[:4] == b"\x89PNG"
