"""Every released LIGHT model and baseline on the real-LIGHT fixture yardstick.

    python benchmarks/light_fixture.py --out docs/results/light_fixture.json
    python benchmarks/light_fixture.py --tasks dialogue --distractors unsaid --models M,... --out FILE
    python benchmarks/light_fixture.py --models random,ir,fasttext --sim-dir runs/light-sim-v2-small  # fit on v2

Runs ``zoo eval light --source fixture --model M --task T --json`` once per model and task, in
a fresh process each (the very command a reader would type; OMP/MKL limited to one thread),
and keeps every JSON object it prints, unchanged, beside its command. Baselines that learn
(fasttext, candidates-only) are trained on LIGHT-sim train by that command. Prints a Markdown
table: metric [95% interval] per model and task, with the released models' LIGHT-sim test-seen
R@1 from the checkpoint manifest beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

MODELS = ("random", "candidates-only", "fasttext", "light-ir", "light-starspace", "light-memnet",
          "light-bi-ranker", "light-cross-ranker")
TASKS = ("dialogue", "action", "emote")
LIGHT_SIM_SEEN_KEYS = ("light_sim_test_r_at_1", "light_sim_test_r_at_1_first500")
"""Manifest metric names of LIGHT-sim test-seen dialogue R@1 (a fraction; the second on 500 examples)."""


def command(model: str, task: str, distractors: str | None = None, sim_dir: str | None = None) -> list[str]:
    pool = ["--distractors", distractors] if distractors else []
    fit_on = ["--sim-dir", sim_dir] if sim_dir else []
    return [sys.executable, "-m", "zoo.cli", "eval", "light", "--source", "fixture", "--model", model,
            "--task", task, *pool, *fit_on, "--json"]


def light_sim_seen(model: str) -> str:
    """The released model's LIGHT-sim test-seen R@1 (percent) as its manifest records it."""
    from zoo.hub import pretrained_entry

    try:
        metrics = pretrained_entry(model).metrics
    except (KeyError, ValueError):
        return "–"
    for key in LIGHT_SIM_SEEN_KEYS:
        if key in metrics:
            value = 100 * metrics[key]
            return f"{value:.1f}" + (" (first 500)" if key.endswith("first500") else "")
    return "–"


def cell(result: dict | None) -> str:
    if result is None:
        return "–"
    metric = "r_at_1" if result["task"] == "dialogue" else "accuracy"
    low, high = result["ci95"][metric]
    return f"{100 * result[metric]:.1f} [{100 * low:.1f}, {100 * high:.1f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--distractors", choices=("other-episodes", "unsaid", "all"), default=None,
                        help="dialogue distractor pool passed to zoo eval light (default: its default)")
    parser.add_argument("--sim-dir", help="the LIGHT-sim corpus the learning baselines (ir, fasttext, "
                        "candidates-only) fit on (default: zoo eval light's, v1 full)")
    parser.add_argument("--out", help="write {rows: [{command, seconds, result}]} here as JSON")
    args = parser.parse_args()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    rows = []
    for model in args.models.split(","):
        for task in args.tasks.split(","):
            argv = command(model, task, args.distractors, args.sim_dir)
            start = time.perf_counter()
            done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
            seconds = round(time.perf_counter() - start, 1)
            if done.returncode != 0:
                sys.exit(f"{' '.join(argv[3:])} failed ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
            result = json.loads(done.stdout.strip().splitlines()[-1])
            shown = "zoo " + " ".join(argv[3:])
            rows.append({"command": shown, "seconds": seconds, "result": result})
            print(f"{seconds:7.1f}s  {shown}: {cell(result)} (n {result['n']})", file=sys.stderr, flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps({"rows": rows}, indent=1) + "\n", encoding="utf-8")
    found = {(r["result"]["model"], r["result"]["task"]): r["result"] for r in rows}
    n = {task: next((r["result"]["n"] for r in rows if r["result"]["task"] == task), "?") for task in TASKS}
    chance = {r["result"]["task"]: f"{100 * r['result']['chance']:.1f}" for r in rows}
    print(f"| model | LIGHT-sim test seen R@1/20 | real LIGHT (fixture, N = {n['dialogue']}) R@1/20 [95% CI] "
          f"| action acc (N = {n['action']}) | emote acc (N = {n['emote']}) |")
    print("|---|---|---|---|---|")
    print("| chance | 5.0 | " + " | ".join(chance.get(task, "–") for task in TASKS) + " |")
    for model in dict.fromkeys(r["result"]["model"] for r in rows):
        print(f"| {model} | {light_sim_seen(model)} | "
              + " | ".join(cell(found.get((model, task))) for task in TASKS) + " |")


if __name__ == "__main__":
    main()
