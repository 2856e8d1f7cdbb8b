"""Plot bandit learning curves (tuning error against frames seen) from the JSON lines of
``studies/blocks_bandit_schedule.py --out FILE``: one line per configuration.

    python studies/plot_schedules.py runs/schedule/results.jsonl docs/results/bandit_schedules.png \
        --json docs/results/bandit_schedules.json

Needs matplotlib (``pip install matplotlib``). ``--json`` also writes the curves it plotted.
"""

from __future__ import annotations

import argparse
import json
from collections import OrderedDict
from pathlib import Path

LABEL_KEYS = ("episodes_per_update", "loss_form", "clip", "init", "lr", "init_from", "feature_scale")


def label(config: dict) -> str:
    start = Path(str(config.get("init_from", "blocks-supervised"))).as_posix()
    start = "replay-schedule supervised (1 epoch)" if "sup-orig" in start else "blocks-supervised"
    parts = [f"B={config['episodes_per_update']}", f"{config['loss_form']} loss", f"{config['clip']} clip",
             f"{config['init']} head init"]
    if config.get("lr", 2.5e-4) != 2.5e-4:
        parts.append(f"lr {config['lr']:g}")
    if config.get("feature_scale", 1.0) != 1.0:
        parts.append(f"features x{config['feature_scale']:g}")
    return ", ".join(parts) + f"; from {start}"


def curves(path: Path) -> "OrderedDict[str, list[dict]]":
    runs: OrderedDict[str, list[dict]] = OrderedDict()
    for line in path.read_text().splitlines():
        record = json.loads(line)
        key = json.dumps({k: record["config"].get(k) for k in LABEL_KEYS}, sort_keys=True)
        points = runs.setdefault(key, [])
        if record["episodes"] == 0 and points:  # a rerun of the same configuration: keep the last
            points.clear()
        points.append(record)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = curves(args.results)
    figure, axis = plt.subplots(figsize=(9, 5.5), dpi=120)
    summary = []
    colours = plt.get_cmap("tab20").colors
    for index, (key, points) in enumerate(runs.items()):
        config = points[-1]["config"]
        name = label(config)
        bold = "sup-orig" in str(config.get("init_from"))  # the original's supervised start
        axis.plot([p["frames"] for p in points], [p["tuning_mean_error"] for p in points], marker="o", label=name,
                  color=colours[(2 * index) % 20 if index < 10 else (2 * index + 1) % 20], linewidth=3 if bold else 1.2)
        summary.append({"label": name, "config": config,
                        "curve": [{k: p[k] for k in ("episodes", "frames", "updates", "tuning_mean_error",
                                                      "train_episode_length")} for p in points]})
    axis.set_xlabel("frames seen (bandit decisions)")
    axis.set_ylabel("tuning mean distance error (first 300 tuning examples)")
    axis.set_title("Contextual bandit from a supervised start, 2,000 episodes, rollouts of 16, lr 2.5e-4")
    axis.grid(alpha=0.3)
    axis.legend(fontsize=7, loc="upper right")
    figure.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(args.out)
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1) + "\n")
    print(f"wrote {args.out} ({len(runs)} curves)")


if __name__ == "__main__":
    main()
