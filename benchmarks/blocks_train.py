"""Training speed of the block policy on this machine: frames/s of supervised training
(collation + forward + backward + Adam) and of contextual-bandit training (rollout with
sampling, rendering and shaped reward, then the update), side by side in one run.

    python benchmarks/blocks_train.py --json

A "frame" is one decision the policy learns from: one supervised demonstration step, or one
step of a rollout. The last line is a JSON object with ``supervised_frames_per_s`` and
``bandit_frames_per_s`` (medians over repeats).
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import time

import torch

from zoo.blocks.datamodule import BlocksDataModule
from zoo.callbacks.contextual_bandit import ContextualBanditLoop
from zoo.models.block_policy import BlockPolicy


def supervised_rate(policy, optimiser, datamodule, batches: int) -> float:
    iterator = iter(datamodule.train_dataloader())
    started, frames = time.perf_counter(), 0
    for batch in itertools.islice(iterator, batches):
        loss = policy._supervised(batch)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        frames += len(batch["action"])
    return frames / (time.perf_counter() - started)


def bandit_rate(policy, optimiser, loop, examples, episodes: int, batches: int) -> float:
    started, frames = time.perf_counter(), 0
    for index in range(batches):
        batch = examples[index * episodes : (index + 1) * episodes]
        rollout = loop.collect(policy, batch)
        loss = policy._from_rollout(rollout, "bandit")
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        frames += len(rollout["actions"])
    return frames / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--episodes", type=int, default=32, help="episodes per bandit update")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    datamodule = BlocksDataModule()
    datamodule.setup()
    policy = BlockPolicy(datamodule.vocabulary.words)
    policy.log = lambda *a, **k: None  # outside a Trainer
    optimiser = torch.optim.Adam(policy.parameters(), lr=2.5e-4)
    loop = ContextualBanditLoop(datamodule.train_examples, renderer=datamodule.renderer, demo_cache=datamodule.demos)
    examples = datamodule.train_examples
    supervised, bandit = [], []
    for _ in range(args.repeats):  # interleaved, so both see the same machine load
        supervised.append(supervised_rate(policy, optimiser, datamodule, args.batches))
        bandit.append(bandit_rate(policy, optimiser, loop, examples, args.episodes, max(1, args.batches // 5)))
    result = {
        "data": getattr(datamodule, "data_source", "procedural"),
        "threads": args.threads,
        "supervised_frames_per_s": statistics.median(supervised),
        "bandit_frames_per_s": statistics.median(bandit),
    }
    for key, value in result.items():
        print(f"{key:26s} {value:,.1f}" if isinstance(value, float) else f"{key:26s} {value}")
    if args.json:
        print(json.dumps({k: round(v, 1) if isinstance(v, float) else v for k, v in result.items()}))


if __name__ == "__main__":
    main()
