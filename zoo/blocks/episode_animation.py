"""Roll a policy out on one example and write what happened as a GIF or PNG strip."""

from __future__ import annotations

from pathlib import Path

import torch

from zoo.blocks.evaluate import greedy_actions
from zoo.blocks.geometry import describe_action
from zoo.blocks.records import Example
from zoo.blocks.rollout import EpisodeRunner


@torch.no_grad()
def render_episode(policy, example: Example, out: str | Path, data_dir=None, renderer=None, fps: int = 2,
                   replace: bool = True) -> Path:
    """Play ``policy`` greedily on ``example`` and animate it: the start, every move, and the
    goal marked in red (for people only; the policy never sees the marker). ``replace=False``
    refuses an existing ``out`` instead of replacing it."""
    from zoo.blocks.animation import write_episode_animation
    from zoo.blocks.render import BoardRenderer

    runner = EpisodeRunner(renderer or BoardRenderer(data_dir), device=policy.device)
    act = greedy_actions(policy)
    runner.start([example], images=True, demonstrations=policy.needs_demonstrations,
                 encode=policy.instruction_encoder, featurize=policy.instruction_featurizer)
    captions = [f"{example.instruction}\nstart, error {runner.env.error()[0]:.2f}"]
    step = 0
    while not runner.env.all_done:
        action = act(runner.observe())
        outcome, _ = runner.step(action)
        step += 1
        failed = " (blocked)" if outcome.failed[0] else ""
        captions.append(f"{example.instruction}\nstep {step}: {describe_action(int(action[0]))}{failed}, "
                        f"error {runner.env.error()[0]:.2f}")
    goal = {
        "positions": runner.boards.goal[0],
        "n_blocks": int(runner.boards.n_blocks[0]),
        "main_block": int(runner.boards.main_block[0]),
    }
    frames = [frame[0] for frame in runner.frames]
    return write_episode_animation(frames, Path(out), goal=goal, captions=captions, fps=fps,
                                   replace=replace)
