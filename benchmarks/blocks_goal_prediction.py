"""How well the goal can be read from the start image and the instruction: a LingUNet-style
goal predictor trained on the real training data.

    python benchmarks/blocks_goal_prediction.py --seconds 3600 --out docs/results/blocks_goal_prediction.jsonl

Trains :class:`~zoo.models.blocks.goal.BlocksGoalPredictor` on the training examples (the
tuning set held out), evaluates the goal error (block lengths from the predicted to the true
goal centre) and the block accuracy on the tuning set after every epoch, keeps the epoch with
the lowest tuning goal error, and reports it on dev. One line of JSON per evaluation
(appended to ``--out``), then a summary beside two references that read no language: the
moved block's start (the goal error of not moving it) and the mean training goal.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path

import torch

from zoo.blocks.datamodule import BlocksDataModule
from zoo.blocks.goals import GoalTargets, goal_errors, goal_targets
from zoo.models.blocks.goal import BlocksGoalPredictor
from zoo.models.bulk_encoding import cpu_has_bf16


def parse(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=None, help="stop after the first epoch past this long")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--weight-decay", type=float, default=0.0)
    parser.add_argument("--channels", type=int, default=32)
    parser.add_argument("--levels", type=int, default=4)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--patience", type=int, default=10, help="epochs without a better tuning error before stopping")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--precision", choices=("bf16", "fp32"), default=None,
                        help="autocast to bfloat16 (default where the CPU multiplies it natively: half the time)")
    parser.add_argument("--out", type=Path, help="append the JSON lines to this file as well")
    parser.add_argument("--json", action="store_true")
    return parser.parse_args(argv)


@torch.no_grad()
def evaluate(model: BlocksGoalPredictor, targets: GoalTargets, batch_size: int = 256, bf16: bool = False) -> dict:
    model.eval()
    errors, correct = [], 0
    for first in range(0, len(targets), batch_size):
        batch = targets.batch(torch.arange(first, min(first + batch_size, len(targets))))
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            goal, block = model.predict(batch["frames"], batch["tokens"], batch["lengths"])
        errors.append(goal_errors(goal, batch["goal"]))
        correct += int((block == batch["block"]).sum())
    errors = torch.cat(errors)
    return {"goal_error_mean": round(float(errors.mean()), 4), "goal_error_median": round(float(errors.median()), 4),
            "within_1_block": round(float((errors <= 1.0).float().mean()), 4),
            "block_accuracy": round(correct / len(targets), 4)}


def references(train: GoalTargets, split: GoalTargets) -> dict:
    """Goal errors of guesses that ignore the instruction's words about the place."""
    staying = goal_errors(split.start, split.goal)
    mean_goal = goal_errors(train.goal.mean(0, keepdim=True).expand_as(split.goal), split.goal)
    return {"block_start": round(float(staying.mean()), 4), "mean_training_goal": round(float(mean_goal.mean()), 4)}


def main(argv=None) -> dict:
    args = parse(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    bf16 = args.precision == "bf16" or (args.precision is None and cpu_has_bf16())
    datamodule = BlocksDataModule(source="real")
    datamodule.setup()
    built = time.perf_counter()
    train, tuning, dev = (goal_targets(examples, datamodule.renderer, datamodule.vocabulary)
                          for examples in (datamodule.train_examples, datamodule.tuning_examples,
                                           datamodule.dev_examples))
    config = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if k not in ("json", "out")}
    config["precision"] = "bf16" if bf16 else "fp32"
    print(f"{len(train)} training, {len(tuning)} tuning, {len(dev)} dev examples "
          f"({len(train.frames)} training boards rendered in {time.perf_counter() - built:.0f}s)", flush=True)
    model = BlocksGoalPredictor(datamodule.vocabulary.words, channels=args.channels, levels=args.levels,
                                dropout=args.dropout, learning_rate=args.lr, weight_decay=args.weight_decay)
    optimizer = model.configure_optimizers()
    generator = torch.Generator().manual_seed(args.seed)
    best, best_state, since_best, curve, started = None, None, 0, [], time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        model.train()
        order = torch.randperm(len(train), generator=generator)
        totals = {"loss": 0.0, "goal_error": 0.0, "block_accuracy": 0.0}
        batches = 0
        for first in range(0, len(order), args.batch_size):
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                values = model.losses(train.batch(order[first : first + args.batch_size]))
            optimizer.zero_grad()
            values["loss"].backward()
            optimizer.step()
            for key in totals:
                totals[key] += float(values[key].detach())
            batches += 1
        point = {"epoch": epoch, **{f"train_{k}": round(v / batches, 4) for k, v in totals.items()},
                 **{f"tuning_{k}": v for k, v in evaluate(model, tuning, bf16=bf16).items()},
                 "seconds": round(time.perf_counter() - started, 1)}
        curve.append(point)
        line = json.dumps({"config": config, **point})
        print(line if args.json else f"epoch {epoch:3d}  train loss {point['train_loss']:.3f}  "
              f"train goal error {point['train_goal_error']:.2f}  tuning goal error {point['tuning_goal_error_mean']:.3f} "
              f"(median {point['tuning_goal_error_median']:.2f}, block {point['tuning_block_accuracy']:.3f})  "
              f"{point['seconds']:.0f}s", flush=True)
        if args.out:
            with args.out.open("a") as handle:
                handle.write(line + "\n")
        if best is None or point["tuning_goal_error_mean"] < best["tuning_goal_error_mean"]:
            best, best_state, since_best = point, copy.deepcopy(model.state_dict()), 0
        else:
            since_best += 1
        if since_best >= args.patience or (args.seconds is not None and point["seconds"] > args.seconds):
            break
    model.load_state_dict(best_state)
    summary = {"config": config, "selected_epoch": best["epoch"], "tuning": {k.removeprefix("tuning_"): v for k, v in best.items() if k.startswith("tuning_")},
               "dev": evaluate(model, dev, bf16=bf16), "references": {"tuning": references(train, tuning),
                                                           "dev": references(train, dev)},
               "epochs_run": len(curve), "seconds": round(time.perf_counter() - started, 1)}
    print(json.dumps(summary), flush=True)
    if args.out:
        with args.out.open("a") as handle:
            handle.write(json.dumps(summary) + "\n")
    return summary


if __name__ == "__main__":
    main(sys.argv[1:])
    sys.exit(0)
