"""Evaluate a Blocks policy: greedy rollouts, distance error as in the paper's Table 2."""

from __future__ import annotations

import time
from typing import Sequence

import torch

from zoo.blocks.records import Example
from zoo.blocks.rollout import EpisodeRunner
from zoo.metrics import DistanceError
from zoo.count_progress import CountProgress


def greedy_actions(policy):
    """The policy's greedy action (``act`` without a generator), as at the paper's test time
    (``EpisodeRunner.play(..., running_only=True)`` shows it only the running episodes)."""

    def act(observation):
        return policy.act(observation).to(observation.previous_action.device)

    return act


def play_greedily(runner: EpisodeRunner, policy, examples: Sequence[Example], act=None):
    """``runner.play`` of ``examples`` with the inputs ``policy`` needs, showing it only the running
    episodes; ``act`` (default: :func:`greedy_actions`) may wrap the policy's choice, e.g. to
    record the episodes' state before each decision."""
    return runner.play(
        examples,
        act or greedy_actions(policy),
        images=policy.needs_images,
        demonstrations=policy.needs_demonstrations,
        encode=policy.instruction_encoder,
        featurize=policy.instruction_featurizer,
        running_only=True,
        track=policy.image_tracker_factory,
    )


@torch.no_grad()
def evaluate_policy(
    policy,
    examples: Sequence[Example],
    batch_size: int = 256,
    runner: EpisodeRunner | None = None,
    progress: bool = True,
    metric: DistanceError | None = None,
) -> dict[str, float]:
    """Mean/median final distance error and closest approach over ``examples``, plus
    ``stop_rate``: the share of episodes the policy ended with STOP before the horizon (a
    policy that never stops keeps moving the block until its 40th move). ``metric``: a fresh
    :class:`DistanceError` to fill, for a caller that wants every episode's error afterwards
    (``metric.final_errors()``: an interval over episodes, a paired comparison of two policies).

    Every example is an episode; averaging over all of them equals the paper's
    per-transition average because every transition has nine instructions (docs/blocks_environment.md §5.3).
    """
    runner = runner or EpisodeRunner()
    metric = DistanceError() if metric is None else metric
    if not examples:
        raise ValueError("no examples to evaluate on")
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    if hasattr(policy, "eval"):
        policy.eval()
    report = CountProgress(len(examples), "episodes", progress)
    started, steps, stopped = time.perf_counter(), 0, 0
    for start in range(0, len(examples), batch_size):
        batch = examples[start : start + batch_size]
        results = play_greedily(runner, policy, batch)
        metric.update(results.final_error, results.min_error)
        steps += runner.decisions
        stopped += int(runner.env.stopped.sum())
        report.advance(len(batch))
    report.close()
    result = {key: float(value) for key, value in metric.compute().items()}
    result.update(steps=steps, stop_rate=stopped / len(examples), seconds=round(time.perf_counter() - started, 3))
    return result
