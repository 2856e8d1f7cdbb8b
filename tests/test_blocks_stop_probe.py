"""tools/blocks_stop_probe.py: a policy's STOP probability at the goal and on the way there."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

from zoo.blocks.datamodule import BlocksDataModule, DemonstrationSteps, StepCollator
from zoo.models.block_policy import BlockPolicy

REPO = Path(__file__).resolve().parent.parent


def load_tool():
    spec = importlib.util.spec_from_file_location("blocks_stop_probe", REPO / "tools" / "blocks_stop_probe.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_probe_splits_demonstration_states_at_their_final_stop():
    datamodule = BlocksDataModule(source="procedural", procedural_sizes={"train": 4, "dev": 5, "test": 2})
    datamodule.setup()
    examples = datamodule.dev_examples
    steps = DemonstrationSteps(examples, datamodule.demos)
    items = [tuple(map(int, item)) for item in steps.items]
    torch.manual_seed(0)
    policy = BlockPolicy(datamodule.vocabulary.words, init="glorot")
    collate = StepCollator(examples, datamodule.demos, policy.vocabulary, datamodule.renderer)
    probe = load_tool().probe

    uniform = probe(policy, collate, items, batch_size=7)
    assert uniform["goal_states"] == len(examples)  # one STOP, at the end of every demonstration
    assert uniform["goal_states"] + uniform["other_states"] == len(items)

    with torch.no_grad():  # a direction head that always says STOP
        policy.direction_head.weight.zero_()
        policy.direction_head.bias.copy_(torch.tensor([0.0, 0.0, 0.0, 0.0, 50.0]))
    always = probe(policy, collate, items)
    assert always["p_stop_at_goal"] > 0.999 and always["p_stop_on_the_way"] > 0.999
    assert always["greedy_stop_at_goal"] == 1.0 and always["greedy_stop_on_the_way"] == 1.0
