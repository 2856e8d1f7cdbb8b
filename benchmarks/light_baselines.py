"""The LIGHT baselines on a corpus: Random, IR, fastText and the candidates-only scorer on the
three tasks (test seen and unseen), and IR's dialogue score with persona or setting removed.

    python benchmarks/light_baselines.py --sim-dir runs/light-sim-full --save runs/light-models --json

Each number is what ``zoo eval light`` prints for the command listed beside it (same seed,
same corpus, same training), so any one can be reproduced alone; this script only avoids
reloading the corpus for every row. Trained fastText models are saved under ``--save`` so the
unseen-test rows evaluate the very model trained for the seen-test row. The last line is one
JSON object with every row.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import lightning as L

from zoo.light.datamodule import LightDataModule
from zoo.light.sim import SimCorpus
from zoo.light.evaluate import evaluate_ranker, fit_fasttext, fit_ir, metric_name
from zoo.factory import create_model

MODELS = {"random": "light-random", "ir": "light-ir", "fasttext": "light-fasttext",
          "candidates-only": "light-candidates-only"}


def command(args, model: str, task: str, split: str, features: str, extra: str = "") -> str:
    source = f"--source sim --sim-dir {args.sim_dir}" if args.sim_dir else f"--source {args.source}"
    feature_flag = "" if features == "parlai_default" else f" --features {features}"
    return (f"zoo eval light --model {model} --task {task} --split {split}{feature_flag} {source}"
            f"{extra} --json").replace("  ", " ")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", choices=("auto", "official", "sim"), default="sim")
    parser.add_argument("--sim-dir", help="a LIGHT-sim corpus directory (default: the cached full-size corpus)")
    parser.add_argument("--tasks", default="dialogue,action,emote")
    parser.add_argument("--models", default="random,ir,fasttext,candidates-only")
    parser.add_argument("--ablations", default="no_persona,no_setting", help="IR dialogue feature sets to add")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save", default="runs/light-models", help="where trained fastText models go")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    rows = []

    def record(model: str, task: str, split: str, features: str, result: dict, label: str, cmd: str) -> None:
        metric = metric_name(task)
        row = {"model": model, "task": task, "split": split, "features": features, "data": label,
               metric: result[metric], "n": result["n"], "chance": result["chance"], "command": cmd}
        rows.append(row)
        print(f"{label} {task:8s} {split:11s} {features:14s} {model:15s} {metric} {result[metric]:.4f} "
              f"(chance {result['chance']:.4f}, n {result['n']})  <- {cmd}", flush=True)

    for task in args.tasks.split(","):
        module = LightDataModule(task=task, source=args.source, sim=SimCorpus(), sim_dir=args.sim_dir)
        module.prepare_data()
        for name in args.models.split(","):
            start = time.perf_counter()
            if name in ("fasttext", "candidates-only"):
                L.seed_everything(args.seed, verbose=False)
                model = create_model(MODELS[name])
                fit_fasttext(model, module, epochs=args.epochs)
                saved = Path(args.save) / f"{task}-{name}"
                model.save_pretrained(saved)
                extra = f" --epochs {args.epochs} --save {saved}"
                record(name, task, "test", "parlai_default", evaluate_ranker(model, module.dataset("test"), task),
                       module.label, command(args, name, task, "test", "parlai_default", extra))
                record(name, task, "test_unseen", "parlai_default",
                       evaluate_ranker(model, module.dataset("test_unseen"), task), module.label,
                       command(args, str(saved), task, "test_unseen", "parlai_default"))
            else:
                for split in ("test", "test_unseen"):
                    L.seed_everything(args.seed, verbose=False)
                    model = create_model(MODELS[name], **({"seed": args.seed} if name == "random" else {}))
                    if name == "ir":
                        fit_ir(model, module)
                    record(name, task, split, "parlai_default", evaluate_ranker(model, module.dataset(split), task),
                           module.label, command(args, name, task, split, "parlai_default"))
            print(f"  ({name} on {task}: {time.perf_counter() - start:.0f}s)", flush=True)
        if task == "dialogue" and args.ablations:
            for features in args.ablations.split(","):
                ablated = LightDataModule(task=task, features=features, source=args.source, sim=SimCorpus(),
                                          sim_dir=args.sim_dir)
                for split in ("test", "test_unseen"):
                    model = fit_ir(create_model("light-ir"), ablated)
                    record("ir", task, split, features, evaluate_ranker(model, ablated.dataset(split), task),
                           ablated.label, command(args, "ir", task, split, features))
    if args.json:
        print(json.dumps({"rows": rows}))


if __name__ == "__main__":
    main()
