"""Plot learning curves of several Blocks methods (tuning error against frames seen) from the
JSON lines of ``studies/blocks_bandit_schedule.py`` and ``studies/blocks_expert_schedule.py``
(``--out FILE``): one line per method, and as a dotted line the first evaluation of
``--start-from`` (default: the last method named), the supervised policy they start from.

    python studies/plot_methods.py docs/results/blocks_methods_short.png \
        bandit=docs/results/blocks_bandit_300.jsonl DAgger=docs/results/blocks_dagger_previous_action_without.jsonl \
        SPO=docs/results/blocks_spo_short.jsonl --json docs/results/blocks_methods_short.json

Needs matplotlib (``pip install "zoo[plots]"``). ``--json`` also writes the curves it plotted.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def curve(path: Path) -> list[dict]:
    """The evaluations of the last run in ``path`` (a rerun starts again at episode 0)."""
    points: list[dict] = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record["episodes"] == 0:
            points.clear()
        points.append({k: v for k, v in record.items() if k != "config"})
    return points


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("methods", nargs="+", metavar="NAME=RESULTS.jsonl")
    parser.add_argument("--start-from", metavar="NAME", help="the method whose first evaluation is the start")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    curves = {}
    for method in args.methods:
        name, _, path = method.partition("=")
        if not path:
            parser.error(f"expected NAME=RESULTS.jsonl, got {method!r}")
        curves[name] = curve(Path(path))
    figure, axes = plt.subplots(figsize=(8, 4.5))
    start = curves[args.start_from or name][0]["tuning_mean_error"]
    for name, points in curves.items():
        axes.plot([p["frames"] for p in points], [p["tuning_mean_error"] for p in points], marker=".", label=name)
    axes.axhline(start, color="grey", linestyle=":", label=f"the supervised start ({start:.2f})")
    axes.set_xlabel("frames seen (simulator steps)")
    axes.set_ylabel("greedy mean error on tuning examples")
    axes.grid(alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(args.out, dpi=110)
    if args.json:
        args.json.write_text(json.dumps(curves, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
