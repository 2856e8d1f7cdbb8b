"""Expert labelling against the rollouts it labels, side by side on this machine.

    python benchmarks/blocks_expert.py --threads 1 --json

DAgger labels every state a rollout visits with the expert's action
(:class:`zoo.blocks.expert.BlocksExpert`). This measures, each a median over ``--repeats``
interleaved repeats on the same episodes:

* ``rollout_decisions_per_s``: the policy's greedy rollouts as DAgger plays them
  (``EpisodeRunner.record``: rendering, image stacks, the network's forward), in batches of
  the ``blocks-dagger`` recipe's ``data.episodes_per_batch`` episodes;
* ``labelling_decisions_per_s``: the expert's actions at every state those rollouts visited,
  called as the ExpertLoop calls it (one batched call per step, a fresh expert per batch, so
  its distance fields are built inside the timing);
* ``labelling_vs_rollout``: how many times faster labelling is than rolling out;
* ``searches_per_episode``: distance fields computed per episode (one per obstacle layout).

The policy is the released supervised one when available (realistic episode lengths), else a
fresh network (its episodes are short: it STOPs or wanders at random).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import torch

from zoo.blocks.datamodule import BlocksDataModule
from zoo.blocks.expert import BlocksExpert
from zoo.blocks.rollout import EpisodeRunner
from zoo.models.blocks import BlocksPolicy, BlocksSupervised
from zoo.models.blocks.network import NETWORK_OPTIONS
from zoo.recipes import recipe_defaults


def load_policy(recipe, words: list[str]) -> tuple[BlocksPolicy, str]:
    try:
        return BlocksPolicy.from_pretrained("blocks-supervised").eval(), "blocks-supervised"
    except (OSError, KeyError, ValueError):
        sizes = {key: value for key, value in recipe.model.options.items() if key in NETWORK_OPTIONS}
        return BlocksSupervised(words, **sizes).eval(), "fresh"


def rollouts(policy, runner: EpisodeRunner, batches) -> tuple[float, list]:
    """Seconds for the rollouts, and each batch's visited states (boards, per-step snapshots)."""
    visited, seconds = [], 0.0
    for examples in batches:
        snapshots = []

        def choose(observation):
            running = (~runner.env.done).nonzero().squeeze(1)
            snapshots.append((observation.positions.clone(), observation.moves_taken.clone(), running))
            return policy.act(observation)

        started = time.perf_counter()
        with torch.no_grad():
            runner.record(examples, choose, encode=policy.encode_instructions, featurize=policy.instruction_features,
                          track=policy.image_tracker)
        seconds += time.perf_counter() - started  # the snapshots' clones are counted here, not below
        visited.append((runner.boards, snapshots))
    return seconds, visited


def labelling(visited) -> tuple[float, int]:
    started, searches = time.perf_counter(), 0
    for boards, snapshots in visited:
        expert = BlocksExpert(boards)
        for positions, moves_taken, running in snapshots:
            expert.act(positions, moves_taken, running)
        searches += expert.searches
    return time.perf_counter() - started, searches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batches", type=int, default=4, help="rollout batches per repeat")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    recipe = recipe_defaults("blocks-dagger")
    datamodule = BlocksDataModule()
    datamodule.setup()
    policy, which = load_policy(recipe, datamodule.vocabulary.words)
    runner = EpisodeRunner(datamodule.renderer)
    size = recipe.data.episodes_per_batch
    examples = datamodule.train_examples
    rates: dict[str, list[float]] = {"rollout": [], "labelling": []}
    decisions = episodes = searches = 0
    for repeat in range(args.repeats):
        offset = repeat * args.batches * size
        batches = [examples[offset + k * size : offset + (k + 1) * size] for k in range(args.batches)]
        rollout_seconds, visited = rollouts(policy, runner, batches)
        label_seconds, searches = labelling(visited)
        decisions = sum(len(r) for _, snapshots in visited for _, _, r in snapshots)
        episodes = sum(len(b) for b in batches)
        rates["rollout"].append(decisions / rollout_seconds)
        rates["labelling"].append(decisions / label_seconds)
    median = {k: statistics.median(v) for k, v in rates.items()}
    result = {
        "data": getattr(datamodule, "data_source", "procedural"),
        "policy": which,
        "threads": args.threads,
        "episodes_per_batch": size,
        "decisions_per_repeat": decisions,
        "rollout_decisions_per_s": round(median["rollout"], 1),
        "labelling_decisions_per_s": round(median["labelling"], 1),
        "labelling_vs_rollout": round(median["labelling"] / median["rollout"], 2),
        "searches_per_episode": round(searches / episodes, 3),
    }
    for key, value in result.items():
        print(f"{key:26s} {value}", file=sys.stderr if args.json else sys.stdout)
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
