"""The STOP study's results (studies/blocks_stop_study.sh): a table, a JSON summary and a plot.

    python studies/blocks_stop_report.py runs/blocks/stop-study --json docs/results/blocks_stop_study.json \
        --plot docs/results/blocks_stop_study.png

Reads each run's curve (``<name>.jsonl``: tuning error and STOP rates every few hundred
episodes) and the probe of its final policy (``probe.jsonl``), and plots two panels against
episodes seen: the greedy tuning error, and the share of sampled training episodes that ended by
STOP. Needs matplotlib for the plot (``pip install -e .[plots]``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

CURVE_KEYS = ("episodes", "frames", "updates", "tuning_mean_error", "tuning_stop_rate", "train_episode_length",
              "train_stop_rate")


def read_runs(folder: Path) -> list[dict]:
    """One record per finished or running study run: its name, config, curve and probe (if probed)."""
    probes = {}
    if (folder / "probe.jsonl").is_file():
        for line in (folder / "probe.jsonl").read_text().splitlines():
            record = json.loads(line)
            probes[record["run"]] = record  # a rerun's probe replaces the earlier one
    runs = []
    for path in sorted(folder.glob("*.jsonl")):
        if path.name.startswith("probe"):  # probe.jsonl, and probes of reference policies kept beside it
            continue
        points = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        if not points:
            continue
        probe = probes.get(path.stem)
        runs.append({"run": path.stem, "config": points[-1]["config"],
                     "curve": [{k: p.get(k) for k in CURVE_KEYS} for p in points],
                     "probe": {k: v for k, v in probe.items() if k not in ("run", "policy")} if probe else None})
    return runs


def table(runs: list[dict]) -> str:
    lines = ["run | start | bandit seed | head | tuning error by 400 episodes | greedy / sampled STOP rate at the end"
             " | p(STOP) at the goal / on the way"]
    for run in runs:
        config, curve, probe = run["config"], run["curve"], run["probe"]
        errors = " ".join(f"{p['tuning_mean_error']:.2f}" for p in curve)
        end = curve[-1]
        stops = f"{end['tuning_stop_rate']:.2f} / {end['train_stop_rate']:.2f}" if end.get("tuning_stop_rate") is not None else "-"
        probed = f"{probe['p_stop_at_goal']:.4f} / {probe['p_stop_on_the_way']:.4f}" if probe else "-"
        head = "reset" if config.get("reset_direction_head", 1) else "kept"
        lines.append(f"{run['run']} | {config.get('init_from')} | {config.get('seed')} | {head} | {errors} | {stops} | {probed}")
    return "\n".join(lines)


def plot(runs: list[dict], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (error_axis, stop_axis) = plt.subplots(1, 2, figsize=(11, 4.5), dpi=120)
    for run in runs:
        curve = run["curve"]
        episodes = [p["episodes"] for p in curve]
        error_axis.plot(episodes, [p["tuning_mean_error"] for p in curve], marker="o", label=run["run"])
        stop_axis.plot(episodes[1:], [p["train_stop_rate"] for p in curve[1:]], marker="o", label=run["run"])
    error_axis.set_ylabel("greedy tuning mean error (first 300 tuning examples)")
    stop_axis.set_ylabel("sampled training episodes ended by STOP (last 400)")
    for axis in (error_axis, stop_axis):
        axis.set_xlabel("bandit episodes seen")
        axis.grid(alpha=0.3)
    stop_axis.legend(fontsize=7)
    figure.suptitle("Contextual bandit, 4 episodes per update: does STOP survive?")
    figure.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out)


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--plot", type=Path)
    args = parser.parse_args(argv)
    runs = read_runs(args.folder)
    if not runs:
        raise SystemExit(f"no study runs in {args.folder}")
    print(table(runs))
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1) + "\n")
    if args.plot:
        plot(runs, args.plot)
    return runs


if __name__ == "__main__":
    main()
