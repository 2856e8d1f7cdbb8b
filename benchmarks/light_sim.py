"""Time to build the full-size LIGHT-sim corpus and all its examples (the goal: minutes, not hours).

    python benchmarks/light_sim.py --json [--preset full] [--out runs/light-sim-full]

Steps, each timed: load the world (the real environment when ``$ZOO_DATA_DIR/light`` has it,
else the authored world), generate the four splits (8,538 / 500 / 1,000 / 739 dialogues by
default), write them in the release layout, read them back through the official loader, and
flatten every split into the examples of the three tasks (ParlAI's default features, with
candidates). The last line is one JSON object with every duration in seconds and the counts.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

from zoo.light.candidates import CandidateOptions
from zoo.light.environment import load_world
from zoo.light.examples import build_examples, full_contexts
from zoo.light.release import SPLITS
from zoo.light.sim import SimConfig, generate_corpus, load_sim_corpus, write_corpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", choices=("full", "small", "tiny"), default="full")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--world", default="auto", help="world source (auto: the richest available)")
    parser.add_argument("--out", help="keep the corpus here (default: a temporary directory, deleted)")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = parser.parse_args()

    config = SimConfig.preset(args.preset, seed=args.seed, world=args.world)
    timings: dict[str, float] = {}

    def timed(name: str, work):
        start = time.perf_counter()
        value = work()
        timings[name] = round(time.perf_counter() - start, 2)
        return value

    world = timed("load_world", lambda: load_world(None, config.world))
    splits = timed("generate", lambda: generate_corpus(config, world))
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(args.out) if args.out else Path(scratch) / "light-sim"
        timed("write", lambda: write_corpus(splits, directory, config, world, {"generate_seconds": timings["generate"]}))
        loaded = timed("load", lambda: load_sim_corpus(directory))
    examples: dict[str, int] = {}

    def flatten() -> None:
        for task in ("dialogue", "action", "emote"):
            for split in SPLITS:
                built = build_examples(loaded[split], task, None, CandidateOptions(rng="per_split"), split)
                full_contexts(built)
                examples[f"{task}/{split}"] = len(built)

    timed("examples", flatten)
    total = round(sum(timings.values()), 2)
    print(f"LIGHT-sim {args.preset} ({world.source} world): generate {timings['generate']}s, write {timings['write']}s, "
          f"load {timings['load']}s, examples of 3 tasks x 4 splits {timings['examples']}s; total {total}s")
    if args.json:
        print(json.dumps({
            "label": "LIGHT-sim", "preset": args.preset, "world": world.source, "seconds": timings,
            "total_seconds": total, "dialogues": {k: len(v) for k, v in loaded.items()}, "examples": examples,
            "cpus": os.cpu_count(), "python": platform.python_version(),
        }))


if __name__ == "__main__":
    main()
