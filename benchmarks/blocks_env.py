"""Speed of the Blocks simulator and renderer (issue: ≥5× a one-episode-at-a-time numpy
simulator; ≥10,000 rendered frames/s at batch 256 on one core).

    python benchmarks/blocks_env.py --json

Prints medians of repeated timings, measured side by side in one run; the last line is one
JSON object with ``env_steps_per_s`` (random actions, no rendering), the one-episode-at-a-time
numpy reference, ``rendered_frames_per_s`` (render + K=4 history stack, uint8) and
``standardised_observations_per_s`` (plus the float32 standardisation the policy reads).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
import torch

from zoo.blocks.board import BoardBatch
from zoo.blocks.env import BlocksEnv
from zoo.blocks.geometry import BOARD_HALF, COLLISION_EXTENT, STOP
from zoo.blocks.procedural import generate_transitions
from zoo.blocks.history import HistoryStack
from zoo.blocks.render import BoardRenderer

DELTAS = np.array([[-0.1, 0.0], [0.1, 0.0], [0.0, 0.1], [0.0, -0.1]])


def numpy_step(positions: np.ndarray, n_blocks: int, action: int) -> bool:
    """The straightforward reference: one episode, one action, plain numpy."""
    if action == STOP:
        return False
    block, direction = divmod(action, 4)
    if block >= n_blocks:
        return False
    target = positions[block] + DELTAS[direction]
    if np.abs(target).max() > BOARD_HALF:
        return True
    gap = np.abs(positions[:n_blocks] - target).max(axis=1)
    gap[block] = np.inf
    if (gap <= COLLISION_EXTENT).any():
        return True
    positions[block] = target
    return False


def median_rate(work, count: int, repeats: int) -> float:
    rates = []
    for _ in range(repeats):
        started = time.perf_counter()
        work()
        rates.append(count / (time.perf_counter() - started))
    return statistics.median(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    transitions = generate_transitions(args.batch, seed=0, min_blocks=20)
    boards = BoardBatch.from_transitions(transitions)
    generator = torch.Generator().manual_seed(0)
    actions = torch.randint(0, 80, (args.steps, args.batch), generator=generator)
    env = BlocksEnv(horizon=10_000)

    def vectorised():
        env.reset(boards)
        for step in range(args.steps):
            env.step(actions[step])

    numpy_actions = actions.numpy()

    def one_at_a_time():
        for episode, transition in enumerate(transitions):
            positions = transition.start.copy()
            for step in range(args.steps):
                numpy_step(positions, transition.n_blocks, int(numpy_actions[step, episode]))

    renderer = BoardRenderer()
    stack = HistoryStack()

    def render_only():
        for step in range(args.steps // 4):
            renderer.render(boards.start, boards.n_blocks, boards.logo)

    stack_buffer = torch.empty(args.batch, 15, 120, 120, dtype=torch.uint8)
    observation_buffer = torch.empty(args.batch, 15, 120, 120)

    def render_with_history():
        """Render, push into the K=4 history, read the [B, 15, 120, 120] uint8 stack."""
        stack.reset(renderer.render(boards.start, boards.n_blocks, boards.logo))
        for step in range(args.steps // 4):
            stack.push(renderer.render(boards.start, boards.n_blocks, boards.logo))
            stack.frames(out=stack_buffer)

    def render_with_standardised_history():
        """As above, plus the float32 standardisation the policy consumes (memory-bound on a CPU)."""
        stack.reset(renderer.render(boards.start, boards.n_blocks, boards.logo))
        for step in range(args.steps // 4):
            stack.push(renderer.render(boards.start, boards.n_blocks, boards.logo))
            stack.observation(out=observation_buffer)

    steps = args.steps * args.batch
    frames = (args.steps // 4) * args.batch
    result = {
        "batch": args.batch,
        "threads": args.threads,
        "env_steps_per_s": median_rate(vectorised, steps, args.repeats),
        "numpy_one_episode_steps_per_s": median_rate(one_at_a_time, steps, args.repeats),
        "rendered_frames_per_s_no_history": median_rate(render_only, frames, args.repeats),
        "rendered_frames_per_s": median_rate(render_with_history, frames, args.repeats),
        "standardised_observations_per_s": median_rate(render_with_standardised_history, frames, args.repeats),
    }
    result["env_speedup_vs_numpy"] = result["env_steps_per_s"] / result["numpy_one_episode_steps_per_s"]
    for key, value in result.items():
        print(f"{key:38s} {value:,.1f}" if isinstance(value, float) else f"{key:38s} {value}")
    if args.json:
        print(json.dumps({k: round(v, 1) if isinstance(v, float) else v for k, v in result.items()}))


if __name__ == "__main__":
    main()
