"""The tracked first convolution against the dense one, on real Blocks rollouts.

Between two steps of an episode one block moves, so a frame differs from the one before it
only inside the moved block's footprints before and after (measured on 1,788 moves of
``blocks-bandit`` on dev: 0.76% of the pixels at the median, 1.0% at most). The first
convolution is linear, so ``zoo.models.incremental_conv.FirstConvolutionTracker`` keeps each
stack's response current from those windows (one matrix product of 36 x 36 patches per
step), where evaluation used to convolve every stack. This script plays ``blocks-bandit``
greedily on dev episodes, then replays the recorded frames through a tracker (the windows
from ``BoardRenderer.move_window``, as ``EpisodeRunner`` gives them) and through the dense
convolution of prebuilt channels-last stacks, and prints (JSON with ``--json``) the largest
relative difference and the median time per step of each.

    python benchmarks/blocks_incremental_conv.py --episodes 128 --json

Measured (128 dev episodes x 40 steps, one thread, under a load of 4) with the
prototype this script used to hold (the same arithmetic): largest relative difference
2.9e-6, 40.6 ms per step against 93.1 for the dense convolution (2.3x).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F

from zoo.blocks.datamodule import BlocksDataModule
from zoo.blocks.evaluate import greedy_actions
from zoo.blocks.rollout import EpisodeRunner
from zoo.models.blocks import BlocksPolicy


def stacks_at(frames: torch.Tensor, t: int, slots: int) -> torch.Tensor:
    """The channels-last float stacks [B, 15, H, W] of step t, zeros before the start."""
    history = [frames[i] if i >= 0 else torch.zeros_like(frames[0]) for i in range(t - slots + 1, t + 1)]
    return torch.stack(history, 1).flatten(1, 2).float().contiguous(memory_format=torch.channels_last)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=128)
    parser.add_argument("--offset", type=int, default=300, help="first dev episode")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    datamodule = BlocksDataModule(batch_size=32)
    datamodule.setup()
    policy = BlocksPolicy.from_pretrained("blocks-bandit").eval()
    episodes = datamodule.dev_examples[args.offset : args.offset + args.episodes]
    runner, boards = EpisodeRunner(datamodule.renderer), []
    greedy = greedy_actions(policy)

    def act(observation):  # greedy, noting every board as it is before each step
        boards.append(runner.env.positions.clone())
        return greedy(observation)

    with torch.no_grad():
        frames = runner.record(episodes, act, encode=policy.encode_instructions,
                               featurize=policy.instruction_features)["frames"]
        boards.append(runner.env.positions.clone())
        first = policy.image.convolutions[0]
        tracker = policy.image_tracker()
        tracker.reset(frames[0])
        everyone = torch.arange(frames.shape[1])
        errors, tracked, dense = [], [], []
        for t in range(1, frames.shape[0]):  # every episode pushed: a finished one repeats its frame
            started = time.perf_counter()
            tracker.push(everyone, frames[t], datamodule.renderer.move_window(boards[t - 1], boards[t]))
            response = tracker.response(everyone).values
            tracked.append(time.perf_counter() - started)
            stacks = stacks_at(frames, t, tracker.slots)
            started = time.perf_counter()
            reference = F.conv2d(stacks, first.weight, None, first.stride, first.padding)
            dense.append(time.perf_counter() - started)
            errors.append(float((response - reference).abs().max() / reference.abs().max()))
    result = {
        "episodes": len(episodes), "steps": frames.shape[0] - 1, "threads": args.threads,
        "max_relative_error": max(errors), "tracker_still_active": tracker.active,
        "tracked_ms_per_step": round(statistics.median(tracked) * 1000, 2),
        "dense_first_conv_ms_per_step": round(statistics.median(dense) * 1000, 2),
    }
    result["speedup"] = round(result["dense_first_conv_ms_per_step"] / result["tracked_ms_per_step"], 2)
    print(json.dumps(result) if args.json else "\n".join(f"{key:32s} {value}" for key, value in result.items()))


if __name__ == "__main__":
    main()
