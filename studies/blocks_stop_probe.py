"""Does a Blocks policy know when to stop? Its STOP probability along the demonstrations.

    python studies/blocks_stop_probe.py blocks-bandit runs/blocks/bandit-s1/best-dev \
        runs/blocks/sup-orig-s1/checkpoints/epoch001.ckpt --limit 400 --json

Every demonstration ends with STOP on the goal, so its steps split the states a policy sees
into "at the goal" (the final step, where STOP is right) and "on the way" (every earlier step,
where it is wrong). For each policy (a released name, a ``save_pretrained`` directory or a
training checkpoint) this prints the mean p(STOP) on both, and how often the greedy joint
action is STOP on both: a policy whose greedy episodes never stop shows a low first
``greedy_stop_at_goal``, one that stops too early a high ``greedy_stop_on_the_way``. One JSON
object per policy with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch


@torch.no_grad()
def probe(policy, collate, items, batch_size: int = 256) -> dict[str, float]:
    from zoo.blocks.geometry import STOP

    policy.eval()
    stop_p, greedy_stop, at_goal = [], [], []
    for first in range(0, len(items), batch_size):
        batch = collate(items[first : first + batch_size])
        block, direction = policy(batch["images"], batch["tokens"], batch["lengths"], batch["previous_action"])
        stop_p.append(direction[:, -1].exp())
        greedy_stop.append(policy.joint_log_probs(block, direction).argmax(-1) == STOP)
        at_goal.append(batch["action"] == STOP)
    stop_p, greedy_stop, at_goal = torch.cat(stop_p), torch.cat(greedy_stop).float(), torch.cat(at_goal)
    return {
        "p_stop_at_goal": float(stop_p[at_goal].mean()),
        "p_stop_on_the_way": float(stop_p[~at_goal].mean()),
        "greedy_stop_at_goal": float(greedy_stop[at_goal].mean()),
        "greedy_stop_on_the_way": float(greedy_stop[~at_goal].mean()),
        "goal_states": int(at_goal.sum()),
        "other_states": int((~at_goal).sum()),
    }


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("policies", nargs="+", help="released names, save_pretrained directories or .ckpt files")
    parser.add_argument("--split", default="dev")
    parser.add_argument("--limit", type=int, default=400, help="first N examples of the split (0: all)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    from zoo.blocks.datamodule import BlocksDataModule, DemonstrationSteps, StepCollator

    datamodule = BlocksDataModule(source="real")
    datamodule.setup()
    examples = datamodule.split(args.split).examples
    examples = examples[: args.limit] if args.limit else examples
    items = [tuple(map(int, item)) for item in DemonstrationSteps(examples, datamodule.demos).items]
    results = []
    from zoo.loading import load_policy

    for name in args.policies:
        policy = load_policy(name)
        collate = StepCollator(examples, datamodule.demos, policy.vocabulary, datamodule.renderer)
        result = {"policy": name, "split": args.split, "examples": len(examples), **probe(policy, collate, items)}
        results.append(result)
        print(json.dumps(result) if args.json else
              f"{name}: p(STOP) {result['p_stop_at_goal']:.3f} at the goal, {result['p_stop_on_the_way']:.3f} on the way; "
              f"greedy STOP {result['greedy_stop_at_goal']:.1%} at the goal, {result['greedy_stop_on_the_way']:.1%} on the way",
              flush=True)
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
