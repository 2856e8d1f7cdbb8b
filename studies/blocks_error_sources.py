"""Where a Blocks policy's error comes from: the wrong block, or the right block in the wrong place.

    python studies/blocks_error_sources.py blocks-supervised blocks-bandit --json \
        --out docs/results/blocks_error_sources.jsonl

The paper's metric sums every block's distance to its goal (docs/blocks_environment.md §5.1), so a policy loses in
two ways: it moves blocks the instruction did not mean (each adds its displacement), or it
moves the right one to the wrong place. Each policy plays dev greedily twice:

* as it is, with the final error split into the gold block's distance and the other blocks'
  (``gold_block`` + ``other_blocks`` = ``final``), the share of episodes whose moves touched
  only the gold block, and, of the episodes that moved at all, the share whose first move
  picked it;
* with the block given: every move restricted to the gold block (the policy still chooses the
  direction and when to STOP, from its own probabilities over the gold block's four moves and
  STOP). The difference to the plain run is what choosing the block costs the policy.

If most of the gap to the paper's 3.60 sits in ``other_blocks`` or closes when the block is
given, the policy's reading of which block the instruction means is what to work on;
otherwise it is where to put it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from zoo.blocks.board import distance_error
from zoo.blocks.geometry import NUM_DIRECTIONS, STOP

GOLD_BLOCK_ONLY = "gold block given"
AS_IS = "as is"
NOT_MOVED = -2


def gold_block_mask(main_block: torch.Tensor, n_actions: int = STOP + 1) -> torch.Tensor:
    """[B, 81] True where an action moves the gold block, or is STOP."""
    actions = torch.arange(n_actions, device=main_block.device)
    moves_gold = (actions[None, :] // NUM_DIRECTIONS) == main_block[:, None]
    return moves_gold | (actions[None, :] == STOP)


@torch.no_grad()
def play(policy, examples, given_block: bool, batch_size: int = 256) -> dict[str, float]:
    """Greedy rollouts of ``examples``; per-episode errors split by block, and block choices."""
    from zoo.blocks.evaluate import play_greedily
    from zoo.blocks.rollout import EpisodeRunner

    runner = EpisodeRunner()
    final, gold, only_gold, first_gold, stopped, moves = [], [], [], [], [], []
    policy.eval()
    for start in range(0, len(examples), batch_size):
        batch = examples[start : start + batch_size]
        touched_other = torch.zeros(len(batch), dtype=torch.bool)  # moved a block other than the gold one
        first_block = torch.full((len(batch),), NOT_MOVED)  # the block of each episode's first move

        def choose(observation):
            scores = policy.score(observation).float()
            running = ~runner.env.done
            main = runner.env.boards.main_block[running].to(scores.device)
            if given_block:
                scores = scores.masked_fill(~gold_block_mask(main), float("-inf"))
            action = scores.argmax(dim=-1).cpu()
            block = torch.where(action == STOP, -1, action // NUM_DIRECTIONS)
            rows = running.nonzero().squeeze(1).cpu()
            touched_other[rows] |= (block >= 0) & (block != main.cpu())
            fresh = (first_block[rows] == NOT_MOVED) & (block >= 0)
            first_block[rows[fresh]] = block[fresh]
            return action.to(observation.previous_action.device)

        play_greedily(runner, policy, batch, choose)
        env = runner.env
        main = env.boards.main_block
        rows = torch.arange(len(main))
        gold_only = (rows[:, None], main[:, None])  # [B, 1, 2]: the metric over the gold block alone
        final.append(env.error().float())
        gold.append(distance_error(env.positions[gold_only], env.boards.goal[gold_only]).float())
        only_gold.append(~touched_other)
        first_gold.append((first_block == main)[first_block != NOT_MOVED])
        stopped.append(env.stopped)
        moves.append(env.moves_taken.float())
    final, gold = torch.cat(final), torch.cat(gold)
    return {
        "final": round(float(final.mean()), 3),
        "final_median": round(float(final.median()), 3),
        "gold_block": round(float(gold.mean()), 3),
        "other_blocks": round(float((final - gold).mean()), 3),
        "only_gold_block_moved": round(float(torch.cat(only_gold).float().mean()), 3),
        "first_move_gold_block": _share(torch.cat(first_gold)),  # None when no episode moved
        "stop_rate": round(float(torch.cat(stopped).float().mean()), 3),
        "moves": round(float(torch.cat(moves).mean()), 2),
        "episodes": len(final),
    }


def _share(flags: torch.Tensor) -> float | None:
    return round(float(flags.float().mean()), 3) if len(flags) else None


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("policies", nargs="+", help="released names, save_pretrained directories or .ckpt files")
    parser.add_argument("--split", default="dev", choices=("dev", "tuning", "test"))
    parser.add_argument("--limit", type=int, default=0, help="first N examples of the split (0: all)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="one JSON object per policy and mode")
    parser.add_argument("--out", type=Path, help="also append the JSON lines to this file")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    from zoo.blocks.datamodule import BlocksDataModule
    from zoo.loading import load_policy

    data = BlocksDataModule(source="real")
    data.setup()
    examples = data.tuning_examples if args.split == "tuning" else data.split(args.split).examples
    if args.limit:
        examples = examples[: args.limit]
    results = []
    for name in args.policies:
        policy = load_policy(name)
        for mode in (AS_IS, GOLD_BLOCK_ONLY):
            result = {"policy": name, "split": args.split, "mode": mode,
                      **play(policy, examples, given_block=mode == GOLD_BLOCK_ONLY)}
            results.append(result)
            line = json.dumps(result)
            if args.out:
                args.out.parent.mkdir(parents=True, exist_ok=True)
                with args.out.open("a") as handle:
                    handle.write(line + "\n")
            print(line if args.json else describe(result), flush=True)
    return results


def describe(result: dict) -> str:
    """One line for a terminal."""
    return (f"{result['policy']} ({result['mode']}): {result['split']} {result['final']:.3f} = gold block "
            f"{result['gold_block']:.3f} + other blocks {result['other_blocks']:.3f}; only the gold block moved in "
            f"{result['only_gold_block_moved']:.0%}, first move on it in {result['first_move_gold_block'] or 0:.0%}")


if __name__ == "__main__":
    main(sys.argv[1:])
