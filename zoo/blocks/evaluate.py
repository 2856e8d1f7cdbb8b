"""Evaluate a Blocks policy: greedy rollouts, distance error as in the paper's Table 2."""

from __future__ import annotations

from typing import Sequence

import torch
from tqdm.auto import tqdm

from zoo.blocks.geometry import STOP
from zoo.blocks.records import Example
from zoo.blocks.rollout import EpisodeRunner
from zoo.metrics import DistanceError


def greedy_actions(policy, active=None):
    """The policy's argmax over the 81 joint action scores, as the paper's test time.

    ``active`` (a callable returning the [B] mask of running episodes) restricts the forward
    pass to those episodes; the others get STOP, which a finished episode ignores.
    """

    def act(observation):
        device = observation.previous_action.device
        if active is None:
            return policy.score(observation).argmax(dim=-1).to(device)
        rows = active().nonzero().squeeze(1)
        actions = torch.full((len(observation),), STOP, dtype=torch.long, device=device)
        if len(rows):
            actions[rows] = policy.score(observation.select(rows)).argmax(dim=-1).to(device)
        return actions

    return act


@torch.no_grad()
def evaluate_policy(
    policy,
    examples: Sequence[Example],
    batch_size: int = 256,
    runner: EpisodeRunner | None = None,
    progress: bool = True,
) -> dict[str, float]:
    """Mean/median final distance error and closest approach over ``examples``.

    Every example is an episode; averaging over all of them equals the paper's
    per-transition average because every transition has nine instructions (spec §5.3).
    """
    runner = runner or EpisodeRunner()
    metric = DistanceError()
    if hasattr(policy, "eval"):
        policy.eval()
    encode = getattr(policy, "encode_instructions", None)
    batches = range(0, len(examples), batch_size)
    for start in tqdm(batches, desc="episodes", unit="batch", disable=not progress):
        batch = examples[start : start + batch_size]
        results = runner.play(
            batch,
            greedy_actions(policy),
            images=getattr(policy, "needs_images", True),
            demonstrations=getattr(policy, "needs_demonstrations", False),
            encode=encode,
            featurize=getattr(policy, "instruction_features", None),
            running_only=True,
        )
        metric.update(results.final_error, results.min_error)
    return {key: float(value) for key, value in metric.compute().items()}
