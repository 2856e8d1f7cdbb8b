"""The tracked first convolution equals the dense one over a whole rollout, and evaluation
with it gives the policy's own results."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F

from zoo.blocks.datamodule import BlocksDataModule
from zoo.blocks.evaluate import evaluate_policy
from zoo.blocks.rollout import EpisodeRunner
from zoo.models.blocks import BlocksSupervised


def procedural() -> BlocksDataModule:
    datamodule = BlocksDataModule(source="procedural", procedural_sizes={"train": 4, "dev": 4, "test": 4}, batch_size=8)
    datamodule.setup()
    return datamodule


def test_the_tracked_response_is_the_dense_convolution_of_every_stack():
    """Random (sampled) actions on real boards, so episodes stop at different steps and
    blocked moves happen: at every step, for every running episode, the tracker's response
    equals the first convolution of the stack the history holds."""
    datamodule = procedural()
    torch.manual_seed(0)
    policy = BlocksSupervised(datamodule.vocabulary.words).eval()
    runner = EpisodeRunner(datamodule.renderer)
    generator = torch.Generator().manual_seed(1)
    first = policy.image.convolutions[0]
    checked = 0

    def choose(observation):
        nonlocal checked
        images = observation.images
        assert images.pixels is None and images.response is not None  # no pixels converted at all
        running = (~runner.env.done).nonzero().squeeze(1)
        stacks = runner.stack.frames(episodes=running).float()  # what the history holds, oldest first
        dense = F.conv2d(stacks, first.weight, None, first.stride, first.padding)
        torch.testing.assert_close(images.response.values, dense, atol=1e-3, rtol=1e-5)
        checked += len(images)
        return policy.act(observation, generator)

    with torch.no_grad():
        runner.record(datamodule.dev_examples[:12], choose, encode=policy.encode_instructions,
                      featurize=policy.instruction_features, track=policy.image_tracker)
    assert runner.tracker.active and checked > 12 * 5


def test_greedy_evaluation_with_and_without_the_tracker_agree():
    datamodule = procedural()
    torch.manual_seed(0)
    policy = BlocksSupervised(datamodule.vocabulary.words)
    examples = datamodule.dev_examples[:24]
    tracked = evaluate_policy(policy, examples, runner=EpisodeRunner(datamodule.renderer), progress=False)
    policy.image_tracker = None  # the dense path
    dense = evaluate_policy(policy, examples, runner=EpisodeRunner(datamodule.renderer), progress=False)
    assert tracked["steps"] == dense["steps"]
    for key in ("mean", "median", "min_mean"):
        assert abs(tracked[key] - dense[key]) < 1e-9


def test_a_model_ignores_a_response_that_is_not_its_own():
    """Another model's tracker (or this model's from before an optimiser step) is not used."""
    torch.manual_seed(0)
    datamodule = procedural()
    policy, other = BlocksSupervised(datamodule.vocabulary.words), BlocksSupervised(datamodule.vocabulary.words)
    runner = EpisodeRunner(datamodule.renderer)
    runner.start(datamodule.dev_examples[:2], images=True, demonstrations=False, track=other.image_tracker)
    stacks = runner.stack.raw_observation()  # with pixels, to compare
    with torch.no_grad():
        dense = policy.image(stacks)
        theirs = replace(stacks, response=runner.tracker.response(torch.arange(2)))
        assert torch.equal(policy.image(theirs), dense)
        with pytest.raises(ValueError, match="tracked first-convolution response"):
            policy.image(replace(theirs, pixels=None))
        tracker = policy.image_tracker()
        tracker.reset(runner.frames[0])
        own = replace(stacks, response=tracker.response(torch.arange(2)))
        torch.testing.assert_close(policy.image(own), dense, atol=1e-4, rtol=1e-4)
        policy.image.convolutions[0].weight.mul_(1.0)  # an in-place update: the response is stale
        assert torch.equal(policy.image(own), dense)
