"""Feasibility of an incremental first convolution for Blocks rollouts (issue 11's moved floor).

Between two steps of an episode one block moves, so a frame differs from the one before it
in a small window (measured on 1,788 moves of ``blocks-bandit`` on dev: 0.76% of the pixels
at the median, 1.0% at most, inside a 16 x 15 box at most). The first convolution is linear,
so the response of a history stack at step t is the one at t-1 plus, for each history slot,
the slot's weights convolved with the change of the frame in that slot:

    conv(stack_t) = conv(stack_{t-1}) + sum_a conv(frame_{t-4+a} - frame_{t-5+a}, W_a)

and each change is nonzero only in its window, so each term is a convolution of a 36 x 36
patch (an 8 x 8 window of outputs), done as one matrix product of the patch's columns
(``unfold``) with the five ages' weights. The first frame of an episode enters densely, once.
This script plays ``blocks-bandit`` greedily on dev episodes, rebuilds every step's
response both ways from the recorded frames, and prints (JSON with ``--json``) the largest
relative difference, how many changes did not fit the window, and the median time per step
of the incremental update against the dense convolution of a prebuilt channels-last stack
(what evaluation did before). The library's version of it is
``zoo.models.incremental_conv.FirstConvolutionTracker``, which EpisodeRunner feeds.

Measured (session 8, 128 dev episodes x 40 steps, one thread, under a load of 4): the
largest relative difference 2.9e-6 and no change outside its window either way; with the
windows from the board (``--windows board``: the moved block's ``BoardRenderer.footprint``
before and after) 40.6 ms per step against 93.1 ms for the dense convolution (**2.3x**);
found in the pixels (``--windows pixels``) 59.5 against 93.7 (1.6x). What is left: cutting
the patches out (a loop over episodes), the matrix product (~15 ms) and adding the five
windows (~12 ms).

    python benchmarks/blocks_incremental_conv.py --episodes 128 --windows board --json
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
from zoo.models.block_policy import BlockPolicy

SLOTS, CHANNELS, KERNEL, STRIDE, PADDING, OUTPUTS = 5, 3, 8, 4, 2, 30
WINDOW = 8  # outputs per side of a change's window
SPAN = (WINDOW - 1) * STRIDE + KERNEL  # input pixels per side of its patch: 36


def stacks_at(frames: torch.Tensor, t: int) -> torch.Tensor:
    """The channels-last float stacks [B, 15, H, W] of step t, zeros before the start."""
    slots = [frames[i] if i >= 0 else torch.zeros_like(frames[0]) for i in range(t - SLOTS + 1, t + 1)]
    return torch.stack(slots, 1).flatten(1, 2).float().contiguous(memory_format=torch.channels_last)


def change_patches(new: torch.Tensor, old: torch.Tensor, bounds: torch.Tensor | None = None):
    """Each episode's change (new - old) as a float patch [B, 3, SPAN, SPAN] and the first output
    row/column of its window; and whether every change fits its window. ``bounds`` [B, 4]
    (row low/high, column low/high, inclusive) say where the changes can be, as the board
    knows (BoardRenderer.footprint); without them they are found in the pixels."""
    batch, height = new.shape[0], new.shape[-2]
    if bounds is None:
        changed = (new != old).any(1)  # [B, H, W]
        pixels = torch.arange(height)
        bounds = []
        for axis in (2, 1):  # rows, then columns
            touched = changed.any(axis)
            bounds += [torch.where(touched, pixels, height).amin(1), torch.where(touched, pixels, -1).amax(1)]
        bounds = torch.stack(bounds, 1)
    first = []
    fits = torch.ones(batch, dtype=torch.bool)
    for low, high in ((bounds[:, 0], bounds[:, 1]), (bounds[:, 2], bounds[:, 3])):
        start = torch.div(low - PADDING, STRIDE, rounding_mode="floor").clamp(0, OUTPUTS - WINDOW)
        fits &= (high < low) | (high <= start * STRIDE - PADDING + SPAN - 1)
        first.append(start)
    # One padded copy of both frames per step, then a slice per episode: a Python loop of 2
    # small copies each is faster here than one fancy-indexed gather (32 ms at B=128).
    pad = (PADDING, SPAN, PADDING, SPAN)
    new_padded, old_padded = F.pad(new, pad), F.pad(old, pad)
    delta = torch.empty(batch, CHANNELS, SPAN, SPAN)
    for episode, (r, c) in enumerate(zip((first[0] * STRIDE).tolist(), (first[1] * STRIDE).tolist())):
        delta[episode].copy_(new_padded[episode, :, r : r + SPAN, c : c + SPAN])
        delta[episode].sub_(old_padded[episode, :, r : r + SPAN, c : c + SPAN])
    return delta, first[0], first[1], fits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=128)
    parser.add_argument("--offset", type=int, default=300, help="first dev episode")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--windows", choices=("board", "pixels"), default="board",
                        help="where each step's change is: from the moved block's footprints, or found in the frames")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    datamodule = BlocksDataModule(batch_size=32)
    datamodule.setup()
    policy = BlockPolicy.from_pretrained("blocks-bandit").eval()
    episodes = datamodule.dev_examples[args.offset : args.offset + args.episodes]
    runner, boards = EpisodeRunner(datamodule.renderer), []
    greedy = greedy_actions(policy)

    def act(observation):  # greedy, noting every board as it is before each step
        boards.append(runner.env.positions.clone())
        return greedy(observation)

    with torch.no_grad():
        record = runner.record(episodes, act, encode=policy.encode_instructions, featurize=policy.instruction_features)
        boards.append(runner.env.positions.clone())
        frames = record["frames"]
        weight = policy.image.convolutions[0].weight
        outputs = weight.shape[0]
        by_age = weight.view(outputs, SLOTS, CHANNELS, KERNEL, KERNEL).transpose(0, 1).reshape(-1, CHANNELS, KERNEL, KERNEL)
        flat_by_age = by_age.flatten(1).t().contiguous()  # [3*8*8, 5*32]
        batch, window = frames.shape[1], torch.arange(WINDOW)
        rows_of = lambda first: (first[:, None] + window)[:, :, None]  # noqa: E731
        cols_of = lambda first: (first[:, None] + window)[:, None, :]  # noqa: E731
        index = torch.arange(batch)[:, None, None]
        first_frame = F.conv2d(frames[0].float().contiguous(memory_format=torch.channels_last), by_age, None, STRIDE, PADDING)
        response = first_frame[:, (SLOTS - 1) * outputs :].clone()
        changes: dict[int, tuple] = {}
        errors, incremental, dense, overflows = [], [], [], 0
        for t in range(1, frames.shape[0]):
            started = time.perf_counter()
            bounds = None
            if args.windows == "board":  # the moved block's footprints before and after
                before, after = boards[t - 1], boards[t]
                block = (before != after).any(-1).float().argmax(1)
                rows = torch.arange(batch)
                one, two = datamodule.renderer.footprint(before[rows, block]), datamodule.renderer.footprint(after[rows, block])
                bounds = torch.stack([torch.minimum(one[:, 0], two[:, 0]), torch.maximum(one[:, 1], two[:, 1]),
                                      torch.minimum(one[:, 2], two[:, 2]), torch.maximum(one[:, 3], two[:, 3])], 1)
            patch, row, col, fits = change_patches(frames[t], frames[t - 1], bounds)
            overflows += int((~fits).sum())
            columns = F.unfold(patch, KERNEL, stride=STRIDE)  # [B, 3*8*8, 64]: a GEMM, not a 3-channel conv
            out = (columns.transpose(1, 2) @ flat_by_age).transpose(1, 2).reshape(batch, -1, WINDOW, WINDOW)
            changes[t] = (out, row, col)  # [B, 5*32, 8, 8]
            changes.pop(t - SLOTS, None)
            for age in range(SLOTS):
                frame = t - SLOTS + 1 + age  # the frame now in history slot `age`
                block = slice(age * outputs, (age + 1) * outputs)
                if frame == 0:
                    response += first_frame[:, block]
                elif frame >= 1:
                    out, r, c = changes[frame]
                    response[index, :, rows_of(r), cols_of(c)] += out[:, block].permute(0, 2, 3, 1)
            incremental.append(time.perf_counter() - started)
            stacks = stacks_at(frames, t)
            started = time.perf_counter()
            reference = F.conv2d(stacks, weight, None, STRIDE, PADDING)
            dense.append(time.perf_counter() - started)
            errors.append(float((response - reference).abs().max() / reference.abs().max()))
    result = {
        "episodes": batch, "steps": frames.shape[0] - 1, "threads": args.threads, "windows": args.windows,
        "max_relative_error": max(errors), "changes_outside_window": overflows,
        "incremental_ms_per_step": round(statistics.median(incremental) * 1000, 2),
        "dense_first_conv_ms_per_step": round(statistics.median(dense) * 1000, 2),
    }
    result["speedup"] = round(result["dense_first_conv_ms_per_step"] / result["incremental_ms_per_step"], 2)
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:32s} {value}")


if __name__ == "__main__":
    main()
