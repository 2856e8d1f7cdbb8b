"""zoo's default thread count against every setting, on an idle and on a loaded machine.

Runs ``zoo eval blocks --model blocks-bandit --split dev --limit 300`` with the default
(:mod:`zoo.threads`: one thread for Blocks acting) and with ``--threads 1 .. cores``, first on
the machine as it is, then with one busy process per core beside it, and reports each setting's
median evaluation seconds (the command's own ``seconds``, start-up left out), the default's
ratio to the best setting of the same condition, and the loaded default's ratio to the idle
one-thread time:

    python benchmarks/threads.py --json

Meaningful on an otherwise idle machine (the "idle" condition is the machine as it is).
Needs the real Blocks data (``$ZOO_DATA_DIR/blocks``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

COMMAND = ["-m", "zoo.cli", "eval", "blocks", "--model", "blocks-bandit", "--split", "dev", "--limit", "300", "--json"]
BUSY_SECONDS = 900
"""A busy process ends by itself after this long, whatever happens to this script."""


def evaluation_seconds(threads: int | None) -> float:
    """One evaluation's own seconds, with ``--threads`` when given (OMP_NUM_THREADS unset, so the
    default is zoo's choice)."""
    env = {key: value for key, value in os.environ.items() if key != "OMP_NUM_THREADS"}
    extra = [] if threads is None else ["--threads", str(threads)]
    done = subprocess.run([sys.executable, *COMMAND, *extra], env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode:
        raise SystemExit(f"zoo eval blocks failed: {done.stderr.strip().splitlines()[-1]}")
    return float(json.loads(done.stdout.strip().splitlines()[-1])["seconds"])


def busy_processes(count: int) -> list[subprocess.Popen]:
    """``count`` processes spinning on the CPU, each ending by itself after :data:`BUSY_SECONDS`."""
    spin = f"import time\nend = time.time() + {BUSY_SECONDS}\nwhile time.time() < end: pass"
    return [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(count)]


def measure(settings: list[int | None], repeats: int) -> dict[str, float]:
    """Median seconds of each setting, the settings interleaved so drift hits them alike."""
    times: dict[str, list[float]] = {str(s if s is not None else "default"): [] for s in settings}
    for _ in range(repeats):
        for setting in settings:
            times[str(setting if setting is not None else "default")].append(evaluation_seconds(setting))
    return {key: round(statistics.median(values), 2) for key, values in times.items()}


def condition(medians: dict[str, float]) -> dict:
    best = min(value for key, value in medians.items() if key != "default")
    return {"median_seconds": medians, "default_over_best": round(medians["default"] / best, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    settings: list[int | None] = [None, *range(1, cores + 1)]
    started = time.time()
    idle = measure(settings, args.repeats)
    busy = busy_processes(cores)
    try:
        loaded = measure(settings, args.repeats)
    finally:
        for process in busy:
            process.kill()
            process.wait()
    summary = {"command": "zoo " + " ".join(COMMAND[2:]), "cores": cores, "repeats": args.repeats,
               "idle": condition(idle), "loaded": condition(loaded),
               "loaded_default_over_idle_one_thread": round(loaded["default"] / idle["1"], 3),
               "wall_seconds": round(time.time() - started, 1)}
    if args.json:
        print(json.dumps(summary))
    else:
        print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
