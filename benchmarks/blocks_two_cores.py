"""Two cores, two ways: one bandit run on two threads, or two runs on one thread each?

Runs ``benchmarks/blocks_train.py`` (the recipe's default bandit configuration) once with
``--threads 2`` alone, then twice at the same time with ``--threads 1``, and reports the
bandit frames per second of each arrangement (the two processes' rates summed):

    python benchmarks/blocks_two_cores.py --json

Meaningful only on an otherwise idle machine with two free cores.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "blocks_train.py"


def start(threads: int, repeats: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(SCRIPT), "--threads", str(threads), "--repeats", str(repeats), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def result(process: subprocess.Popen) -> dict:
    out, _ = process.communicate()
    if process.returncode:
        raise SystemExit(f"{SCRIPT.name} failed with exit code {process.returncode}")
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    one_run = result(start(2, args.repeats))
    pair = [start(1, args.repeats), start(1, args.repeats)]
    two_runs = [result(p) for p in pair]
    summary = {
        "one_run_two_threads_frames_per_s": one_run["bandit_frames_per_s"],
        "two_runs_one_thread_frames_per_s": round(sum(r["bandit_frames_per_s"] for r in two_runs), 1),
        "two_runs_each": [r["bandit_frames_per_s"] for r in two_runs],
    }
    summary["two_runs_over_one"] = round(summary["two_runs_one_thread_frames_per_s"]
                                         / summary["one_run_two_threads_frames_per_s"], 3)
    if args.json:
        print(json.dumps(summary))
    else:
        for key, value in summary.items():
            print(f"{key:34s} {value}")


if __name__ == "__main__":
    main()
