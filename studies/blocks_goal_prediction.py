"""How well the goal can be read from the start image and the instruction: a LingUNet-style
goal predictor trained on the real training data, with the variants docs/blocks.md compares
(dropout, mirrored examples, weights averaged over epochs, seeds, ensembles). The model itself
trains with ``zoo train blocks-goal-reader`` and is evaluated with ``zoo eval blocks --model``.

    python studies/blocks_goal_prediction.py --seconds 3600 --out docs/results/blocks_goal_prediction.jsonl

Trains :class:`~zoo.models.blocks.goal.BlocksGoalPredictor` on the training examples (the
tuning set held out), evaluates the goal error (block lengths from the predicted to the true
goal centre) and the block accuracy on the tuning and dev sets after every epoch, and keeps the
epoch with the lowest tuning goal error (the dev curve shows what that choice costs; with
``--average-from``, the mean of the weights from that epoch on, chosen the same way). On dev it
also reports the task error of carrying the prediction out with the shortest-path expert
(:func:`~zoo.blocks.goals.executed_errors`): what the goal prediction is worth to a perfect
controller, beside the oracle's lattice error. One line of JSON per evaluation
(appended to ``--out``), then a summary beside two references that read no language: the
moved block's start (the goal error of not moving it) and the mean training goal.

``--evaluate WEIGHTS...`` trains nothing (several files: their ensemble) and also breaks the tuning and dev errors down: by
episode, by whether the instruction's writer wrote training instructions, and how far each
split's boards and goals are from the training ones.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from zoo.blocks.datamodule import BlocksDataModule
from zoo.blocks.geometry import BLOCK_SIZE
from zoo.blocks.goals import GoalTargets, executed_errors, goal_errors, goal_targets, mirrored_examples
from zoo.models.blocks.goal import BlocksGoalPredictor, GoalPredictorEnsemble
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
    parser.add_argument("--mirror", action="store_true",
                        help="train on every example and its left-right mirror (zoo.blocks.goals.mirrored_examples)")
    parser.add_argument("--average-from", type=int, default=0, metavar="EPOCH",
                        help="also keep the mean of the weights after every epoch from EPOCH on "
                             "(torch.optim.swa_utils.AveragedModel); it is then the model selected, saved and reported")
    parser.add_argument("--patience", type=int, default=10, help="epochs without a better tuning error before stopping")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--precision", choices=("bf16", "fp32"), default=None,
                        help="autocast to bfloat16 (default where the CPU multiplies it natively: half the time)")
    parser.add_argument("--out", type=Path, help="append the JSON lines to this file as well")
    parser.add_argument("--evaluate", type=Path, nargs="+", metavar="WEIGHTS",
                        help="train nothing: report the weights --save wrote; several files are read as one "
                             "ensemble (GoalPredictorEnsemble), each built with the sizes saved beside it")
    parser.add_argument("--save", type=Path, help="write the selected epoch's weights to this safetensors file")
    parser.add_argument("--json", action="store_true")
    return parser.parse_args(argv)


@torch.no_grad()
def predictions(model: BlocksGoalPredictor | GoalPredictorEnsemble, targets: GoalTargets, batch_size: int = 256,
                bf16: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """The predicted goal centres [N, 2] and blocks [N] of every item of ``targets``."""
    model.eval()
    goals, blocks = [], []
    for first in range(0, len(targets), batch_size):
        batch = targets.batch(torch.arange(first, min(first + batch_size, len(targets))))
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            goal, block = model.predict(batch["frames"], batch["tokens"], batch["lengths"])
        goals.append(goal)
        blocks.append(block)
    return torch.cat(goals), torch.cat(blocks)


def evaluate(model: BlocksGoalPredictor | GoalPredictorEnsemble, targets: GoalTargets, bf16: bool = False, transitions=None,
             predicted: tuple[torch.Tensor, torch.Tensor] | None = None) -> dict:
    """Goal error and block accuracy; with the split's ``transitions``, also the task error of
    carrying the prediction out with the expert (predicted block, and the gold block). Pass
    ``predicted`` (what :func:`predictions` returned) to score it without predicting again."""
    goal, block = predicted if predicted is not None else predictions(model, targets, bf16=bf16)
    errors = goal_errors(goal, targets.goal)
    report = {"goal_error_mean": round(float(errors.mean()), 4), "goal_error_median": round(float(errors.median()), 4),
              "within_1_block": round(float((errors <= 1.0).float().mean()), 4),
              "block_accuracy": round(float((block == targets.block).float().mean()), 4)}
    if transitions is not None:
        report["executed_error"] = round(float(executed_errors(transitions, block, goal).mean()), 4)
        report["executed_error_gold_block"] = round(float(executed_errors(transitions, targets.block, goal).mean()), 4)
    return report


def by_episode(examples, targets: GoalTargets, goal: torch.Tensor) -> list[dict]:
    """The goal error of each episode of the split (its boards, described by several people),
    easiest first: how much of a split's error a few layouts carry."""
    errors = goal_errors(goal, targets.goal)
    rows: dict[str, list[int]] = {}
    for row, example in enumerate(examples):
        rows.setdefault(f"{example.transition.episode_id} ({example.decoration})", []).append(row)
    episodes = [{"episode": name, "n": len(index), "goal_error_median": round(float(errors[index].median()), 4),
                 "goal_error_mean": round(float(errors[index].mean()), 4)} for name, index in rows.items()]
    return sorted(episodes, key=lambda episode: episode["goal_error_median"])


def nearest_board_distance(boards: list[np.ndarray], pool: list[np.ndarray]) -> np.ndarray:
    """For each board, the distance (block lengths) to the most similar board of ``pool`` with as
    many blocks: the largest distance from a block of either board to the nearest block of the
    other, so a board whose blocks are all within d of another's is at most d from it."""
    distances = []
    for board in boards:
        best = np.inf
        for other in pool:
            if len(other) == len(board):
                apart = np.linalg.norm(board[:, None] - other[None], axis=-1)
                best = min(best, max(apart.min(0).max(), apart.min(1).max()))
        distances.append(best / BLOCK_SIZE)
    return np.array(distances)


def shift_from_training(train_examples, split_examples) -> dict:
    """How a split differs from the training examples: how far its start boards are from the
    nearest training board (block lengths; 0 would be a board training holds), how often its
    goal is a place where the same block ended in training, and how many of its instructions
    were written by people who wrote training ones."""
    training = list({id(e.transition): e.transition for e in train_examples}.values())
    transitions = list({id(e.transition): e.transition for e in split_examples}.values())
    distances = nearest_board_distance([t.start for t in transitions], [t.start for t in training])
    ends: dict[tuple, list] = {}
    for transition in training:
        ends.setdefault((transition.decoration, transition.moved_block), []).append(transition.goal[transition.moved_block])
    on_spot = [any(np.linalg.norm(end - t.goal[t.moved_block]) < 0.1 * BLOCK_SIZE
                   for end in ends.get((t.decoration, t.moved_block), [])) for t in transitions]
    writers = {e.user for e in train_examples}
    return {"boards": len(transitions), "nearest_training_board_median": round(float(np.median(distances)), 3),
            "nearest_training_board_min": round(float(distances.min()), 3),
            "goal_where_block_ended_in_training": round(float(np.mean(on_spot)), 4),
            "examples_by_training_writers": round(float(np.mean([e.user in writers for e in split_examples])), 4)}


def errors_by_writer(train_examples, split_examples, targets: GoalTargets, goal: torch.Tensor) -> dict:
    """Mean goal error of the instructions by people who wrote training ones, and by the others."""
    writers = {e.user for e in train_examples}
    seen = torch.tensor([e.user in writers for e in split_examples])
    errors = goal_errors(goal, targets.goal)
    return {group: round(float(errors[mask].mean()), 4) if mask.any() else None
            for group, mask in (("training_writers", seen), ("new_writers", ~seen))}


def split_breakdown(datamodule, targets: dict[str, GoalTargets], goals: dict[str, torch.Tensor]) -> dict:
    """Per split: the goal error of the predicted ``goals`` by episode and by writer, and how the
    split differs from training."""
    examples = {"tuning": datamodule.tuning_examples, "dev": datamodule.dev_examples}
    train = datamodule.train_examples
    return {"by_episode": {name: by_episode(examples[name], split, goals[name]) for name, split in targets.items()},
            "by_writer": {name: errors_by_writer(train, examples[name], split, goals[name])
                          for name, split in targets.items()},
            "shift": {name: shift_from_training(train, examples[name]) for name in targets}}


def saved_predictor(path: Path, vocabulary: list[str]) -> BlocksGoalPredictor:
    """The predictor ``--save`` wrote to ``path``, built with the sizes recorded in its metadata."""
    with safe_open(str(path), "pt") as weights:
        saved = json.loads((weights.metadata() or {}).get("config", "{}"))
    model = BlocksGoalPredictor(vocabulary, channels=saved.get("channels", 32), levels=saved.get("levels", 4))
    model.load_state_dict(load_file(str(path)))
    return model


def append_line(path: Path, line: str) -> None:
    with path.open("a") as handle:
        handle.write(line + "\n")


def report(summary: dict, out: Path | None) -> None:
    """Print the summary as the last JSON line, and append it to ``--out``."""
    line = json.dumps(summary)
    print(line, flush=True)
    if out:
        append_line(out, line)


def references(train: GoalTargets, split: GoalTargets) -> dict:
    """Goal errors of guesses that ignore the instruction's words about the place."""
    staying = goal_errors(split.start, split.goal)
    mean_goal = goal_errors(train.goal.mean(0, keepdim=True).expand_as(split.goal), split.goal)
    return {"block_start": round(float(staying.mean()), 4), "mean_training_goal": round(float(mean_goal.mean()), 4)}


def oracle_error(split: GoalTargets, transitions) -> float:
    """The task error of the true block carried to its true goal by the expert (the lattice's)."""
    return round(float(executed_errors(transitions, split.block, split.goal).mean()), 4)


def main(argv=None) -> dict:
    args = parse(argv)
    if args.save is not None and args.save.exists():
        raise SystemExit(f"{args.save} exists; pass a new path to --save")
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    bf16 = args.precision == "bf16" or (args.precision is None and cpu_has_bf16())
    datamodule = BlocksDataModule(source="real")
    datamodule.setup()
    built = time.perf_counter()
    training_examples = list(datamodule.train_examples)
    if args.mirror:
        training_examples += mirrored_examples(training_examples)
    train, tuning, dev = (goal_targets(examples, datamodule.renderer, datamodule.vocabulary)
                          for examples in (training_examples, datamodule.tuning_examples,
                                           datamodule.dev_examples))
    config = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if k not in ("json", "out", "save", "evaluate")}
    config["precision"] = "bf16" if bf16 else "fp32"
    print(f"{len(train)} training, {len(tuning)} tuning, {len(dev)} dev examples "
          f"({len(train.frames)} training boards rendered in {time.perf_counter() - built:.0f}s)", flush=True)
    model = BlocksGoalPredictor(datamodule.vocabulary.words, channels=args.channels, levels=args.levels,
                                dropout=args.dropout, learning_rate=args.lr, weight_decay=args.weight_decay)
    dev_transitions = [example.transition for example in datamodule.dev_examples]
    if args.evaluate is not None:
        predictors = [saved_predictor(path, datamodule.vocabulary.words) for path in args.evaluate]
        model = predictors[0] if len(predictors) == 1 else GoalPredictorEnsemble(predictors)
        predicted = {name: predictions(model, split, bf16=bf16) for name, split in (("tuning", tuning), ("dev", dev))}
        summary = {"config": config, "weights": [str(path) for path in args.evaluate],
                   "tuning": evaluate(model, tuning, predicted=predicted["tuning"]),
                   "dev": evaluate(model, dev, transitions=dev_transitions, predicted=predicted["dev"]),
                   **split_breakdown(datamodule, {"tuning": tuning, "dev": dev},
                                     {name: goal for name, (goal, _) in predicted.items()}),
                   "references": {"dev": {**references(train, dev), "oracle": oracle_error(dev, dev_transitions)}}}
        report(summary, args.out)
        return summary
    optimizer = model.configure_optimizers()
    generator = torch.Generator().manual_seed(args.seed)
    best, best_error, best_averaged, best_state, since_best = None, float("inf"), False, None, 0
    curve, started = [], time.perf_counter()
    averaged = torch.optim.swa_utils.AveragedModel(model) if args.average_from else None
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
                 **{f"dev_{k}": v for k, v in evaluate(model, dev, bf16=bf16).items()},
                 "seconds": round(time.perf_counter() - started, 1)}
        if args.average_from and epoch >= args.average_from:
            averaged.update_parameters(model)
            point |= {**{f"average_tuning_{k}": v for k, v in evaluate(averaged.module, tuning, bf16=bf16).items()},
                      **{f"average_dev_{k}": v for k, v in evaluate(averaged.module, dev, bf16=bf16).items()}}
        curve.append(point)
        line = json.dumps({"config": config, **point})
        print(line if args.json else f"epoch {epoch:3d}  train loss {point['train_loss']:.3f}  "
              f"train goal error {point['train_goal_error']:.2f}  tuning goal error {point['tuning_goal_error_mean']:.3f} "
              f"(median {point['tuning_goal_error_median']:.2f}, block {point['tuning_block_accuracy']:.3f})  "
              f"dev {point['dev_goal_error_mean']:.3f}  "
              + (f"averaged: tuning {point['average_tuning_goal_error_mean']:.3f} dev {point['average_dev_goal_error_mean']:.3f}  "
                 if "average_dev_goal_error_mean" in point else "")
              + f"{point['seconds']:.0f}s", flush=True)
        if args.out:
            append_line(args.out, line)
        averaging = bool(args.average_from) and epoch >= args.average_from
        error = point["average_tuning_goal_error_mean" if averaging else "tuning_goal_error_mean"]
        if averaging and epoch == args.average_from:
            best = None  # from here on only the averaged model is selected
        if best is None or error < best_error:
            selected = averaged.module if averaging else model
            best, best_error, best_averaged, since_best = point, error, averaging, 0
            best_state = copy.deepcopy(selected.state_dict())
        else:
            since_best += 1
        if since_best >= args.patience or (args.seconds is not None and point["seconds"] > args.seconds):
            break
    model.load_state_dict(best_state)
    if args.save:
        args.save.parent.mkdir(parents=True, exist_ok=True)
        save_file({k: v.contiguous() for k, v in best_state.items()}, str(args.save), metadata={"config": json.dumps(config)})
    prefix = "average_tuning_" if best_averaged else "tuning_"
    summary = {"config": config, "selected_epoch": best["epoch"], "averaged": best_averaged,
               "tuning": {k.removeprefix(prefix): v for k, v in best.items() if k.startswith(prefix)},
               "dev": evaluate(model, dev, bf16=bf16, transitions=dev_transitions),
               "references": {"tuning": references(train, tuning),
                              "dev": {**references(train, dev), "oracle": oracle_error(dev, dev_transitions)}},
               "epochs_run": len(curve), "seconds": round(time.perf_counter() - started, 1)}
    report(summary, args.out)
    return summary


if __name__ == "__main__":
    main(sys.argv[1:])
    sys.exit(0)
