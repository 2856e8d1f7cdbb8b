"""studies/blocks_stop_probe.py: a policy's STOP probability at the goal and on the way there."""

from __future__ import annotations

import pytest
import torch

from zoo.blocks.datamodule import BlocksDataModule, DemonstrationSteps, StepCollator
from zoo.models.blocks import BlocksSupervised
from study_support import load_study


@pytest.mark.slow
def test_the_probe_splits_demonstration_states_at_their_final_stop():
    datamodule = BlocksDataModule(source="procedural", procedural_sizes={"train": 4, "dev": 5, "test": 2})
    datamodule.setup()
    examples = datamodule.dev_examples
    steps = DemonstrationSteps(examples, datamodule.demos)
    items = [tuple(map(int, item)) for item in steps.items]
    torch.manual_seed(0)
    policy = BlocksSupervised(datamodule.vocabulary.words, init="glorot")
    collate = StepCollator(examples, datamodule.demos, policy.vocabulary, datamodule.renderer)
    probe = load_study("blocks_stop_probe").probe

    uniform = probe(policy, collate, items, batch_size=7)
    assert uniform["goal_states"] == len(examples)  # one STOP, at the end of every demonstration
    assert uniform["goal_states"] + uniform["other_states"] == len(items)

    with torch.no_grad():  # a direction head that always says STOP
        policy.direction_head.weight.zero_()
        policy.direction_head.bias.copy_(torch.tensor([0.0, 0.0, 0.0, 0.0, 50.0]))
    always = probe(policy, collate, items)
    assert always["p_stop_at_goal"] > 0.999 and always["p_stop_on_the_way"] > 0.999
    assert always["greedy_stop_at_goal"] == 1.0 and always["greedy_stop_on_the_way"] == 1.0


def test_the_report_pairs_each_curve_with_its_probe(tmp_path):
    import json

    report = load_study("blocks_stop_report")
    config = {"init_from": "start.ckpt", "seed": 1, "reset_direction_head": 0}
    points = [{"config": config, "episodes": e, "frames": 20 * e, "updates": e // 4, "tuning_mean_error": err,
               "tuning_stop_rate": 0.1, "train_episode_length": 24.0, "train_stop_rate": 0.6}
              for e, err in ((0, 5.7), (400, 5.4))]
    (tmp_path / "keep-head.jsonl").write_text("".join(json.dumps(p) + "\n" for p in points))
    (tmp_path / "unprobed.jsonl").write_text(json.dumps(points[0]) + "\n")
    probe = {"run": "keep-head", "policy": "x", "p_stop_at_goal": 0.38, "p_stop_on_the_way": 0.03}
    (tmp_path / "probe.jsonl").write_text(json.dumps({**probe, "p_stop_at_goal": 0.1}) + "\n" + json.dumps(probe) + "\n")

    runs = report.main([str(tmp_path), "--json", str(tmp_path / "summary.json")])
    assert [run["run"] for run in runs] == ["keep-head", "unprobed"]
    assert runs[0]["probe"] == {"p_stop_at_goal": 0.38, "p_stop_on_the_way": 0.03}  # the latest probe of a run
    assert runs[1]["probe"] is None
    assert [p["tuning_mean_error"] for p in runs[0]["curve"]] == [5.7, 5.4]
    assert "keep-head | start.ckpt | 1 | kept | 5.70 5.40 | 0.10 / 0.60 | 0.3800 / 0.0300" in report.table(runs)


@pytest.mark.slow
def test_the_horizon_records_each_episodes_error_after_every_move_and_ends_at_the_final_error():
    from zoo.blocks.evaluate import evaluate_policy

    horizon = load_study("blocks_stop_horizon")
    datamodule = BlocksDataModule(source="procedural", procedural_sizes={"train": 4, "dev": 5, "test": 2})
    datamodule.setup()
    examples = datamodule.dev_examples
    torch.manual_seed(0)
    policy = BlocksSupervised(datamodule.vocabulary.words, init="glorot")

    errors = horizon.error_by_move(policy, examples, batch_size=3)  # two batches
    assert errors.shape == (horizon.HORIZON + 1, len(examples))
    final = evaluate_policy(policy, examples, progress=False)
    assert abs(float(errors[-1].mean()) - final["mean"]) < 1e-5  # the last row is where episodes ended
    assert abs(float(errors.min(0).values.mean()) - final["min_mean"]) < 1e-5  # the closest point on the way

    with torch.no_grad():  # a policy that stops at once leaves every block at its start
        policy.direction_head.weight.zero_()
        policy.direction_head.bias.copy_(torch.tensor([0.0, 0.0, 0.0, 0.0, 50.0]))
    stopped = horizon.error_by_move(policy, examples)
    assert torch.equal(stopped, stopped[:1].expand_as(stopped))
