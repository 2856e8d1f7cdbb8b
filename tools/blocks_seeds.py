"""The Blocks seeds (tools/blocks_seed.sh): their learning curves, and each seed's best epoch by dev.

    python tools/blocks_seeds.py report --seeds 0 1 2 --json docs/results/blocks_seeds.json \
        --plot docs/results/blocks_seeds.png [--recorded docs/results/blocks_seed0_recorded.json]
    python tools/blocks_seeds.py export runs/blocks/bandit-s1            # -> runs/blocks/bandit-s1/best-dev
    python tools/blocks_seeds.py starts --seeds 1 2 --plot docs/results/blocks_supervised_starts.png

``report`` reads each seed's ``metrics.jsonl`` (``runs/blocks/sup-orig-sN`` for the supervised
start, ``runs/blocks/bandit-sN`` for the bandit), prints
each epoch's errors with the dev closest approach and greedy decisions per dev episode (40.0:
the policy never stops), and plots the dev mean error after each bandit epoch, one line per
seed, beside the paper's figures. ``--recorded`` adds seeds whose run directories are gone, from rows measured when
they ran (a JSON list of ``{"seed", "stage", "epoch", "tuning", "dev_mean", "dev_median"}``).

``starts`` compares the §6.4 supervised starts with and without the previous-action input
(``runs/blocks/sup-orig-sN`` and ``sup-orig-sN-noprev``): dev and tuning error by epoch.

``export`` applies the paper's selection rule (the epoch with the lowest dev mean error) and
saves that epoch's policy with ``save_pretrained``: what ``zoo eval blocks --model`` and the
ensemble take. Needs matplotlib for the plot (``pip install -e .[plots]``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

PAPER_DEV = {"bandit (F1+F2), paper": 3.60, "supervised, paper": 4.65}


def run_rows(run_dir: Path, seed: int, stage: str) -> list[dict]:
    from zoo.callbacks.epoch_metrics import read_epoch_metrics

    if not (run_dir / "metrics.jsonl").is_file():
        return []
    rows = []
    for row in read_epoch_metrics(run_dir):
        if row.get("dev/mean_error") is None:
            continue
        speeds = row.get("dev/steps_per_s"), row.get("dev/episodes_per_s")
        rows.append({"seed": seed, "stage": stage, "epoch": row["epoch"], "tuning": row.get("tuning/mean_error"),
                     "dev_mean": row["dev/mean_error"], "dev_median": row.get("dev/median_error"),
                     "dev_min_mean": row.get("dev/min_mean_error"),
                     # greedy decisions per dev episode (40 moves, or fewer and a STOP)
                     "dev_decisions": speeds[0] / speeds[1] if all(speeds) else None,
                     "train_seconds": row.get("train_seconds"), "source": str(run_dir)})
    return rows


def collect(runs: Path, seeds: list[int], recorded: Path | None) -> list[dict]:
    rows = json.loads(recorded.read_text()) if recorded else []
    for seed in seeds:
        rows += run_rows(runs / f"sup-orig-s{seed}", seed, "supervised")
        rows += run_rows(runs / f"bandit-s{seed}", seed, "bandit")
    return rows


def best_by_dev(rows: list[dict]) -> dict[int, dict]:
    """Each seed's bandit epoch with the lowest dev mean error (the paper's rule)."""
    best: dict[int, dict] = {}
    for row in rows:
        if row["stage"] == "bandit" and (row["seed"] not in best or row["dev_mean"] < best[row["seed"]]["dev_mean"]):
            best[row["seed"]] = row
    return best


def plot(rows: list[dict], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(8, 4.8), dpi=120)
    colours = plt.get_cmap("tab10").colors
    for seed in sorted({row["seed"] for row in rows}):
        colour = colours[seed % 10]
        start = [r for r in rows if r["seed"] == seed and r["stage"] == "supervised"]
        bandit = sorted((r for r in rows if r["seed"] == seed and r["stage"] == "bandit"), key=lambda r: r["epoch"])
        xs = [0] * bool(start) + [r["epoch"] + 1 for r in bandit]
        dev = [start[-1]["dev_mean"]] * bool(start) + [r["dev_mean"] for r in bandit]
        axis.plot(xs, dev, "o-", color=colour, label=f"seed {seed}, dev")
        closest = [(r["epoch"] + 1, r["dev_min_mean"]) for r in bandit if r.get("dev_min_mean") is not None]
        if closest:  # where the episodes passed nearest the goal: the error a well-timed STOP would leave
            axis.plot(*zip(*closest), "v--", color=colour, alpha=0.6, markersize=4,
                      label=f"seed {seed}, dev, closest point")
        tuning = [(r["epoch"] + 1, r["tuning"]) for r in bandit if r.get("tuning") is not None]
        if tuning:
            axis.plot(*zip(*tuning), "x:", color=colour, alpha=0.7, label=f"seed {seed}, tuning")
    for (name, value), style in zip(PAPER_DEV.items(), ("--", "-.")):
        paper_line(axis, value, name, style)
    top = 7.0  # a diverged epoch (seed 2's fourth: 9.3) would squash the rest; it is named at the top instead
    off_scale = [(r["seed"], r["epoch"] + 1, r["dev_mean"]) for r in rows
                 if r["stage"] == "bandit" and r["dev_mean"] > top]
    if off_scale:
        axis.set_ylim(top=top)
        for seed, x, value in off_scale:
            axis.annotate(f"seed {seed}: {value:.2f} ↑", (x, top), xytext=(0, -12), textcoords="offset points",
                          ha="center", fontsize=8, color=colours[seed % 10])
    axis.legend(fontsize=8, ncol=2, loc="upper right", bbox_to_anchor=(1.0, 0.93))
    save(figure, axis, out, "bandit epochs (11,196 episodes each; 0 = the supervised start)",
         "mean distance error (block lengths)", "Blocks, contextual bandit with F1+F2 shaping, one line per seed")


def paper_line(axis, value: float, name: str, style: str = "--") -> None:
    """A horizontal grey line at one of the paper's figures, named at the right end."""
    axis.axhline(value, color="grey", linestyle=style, linewidth=1)
    axis.annotate(name, (axis.get_xlim()[1], value), xytext=(-4, 3), textcoords="offset points",
                  ha="right", color="grey", fontsize=8)


def save(figure, axis, out: Path, xlabel: str, ylabel: str, title: str) -> None:
    axis.set_xlabel(xlabel)
    axis.set_ylabel(ylabel)
    axis.set_title(title)
    axis.grid(alpha=0.3)
    figure.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out)


STARTS = {"with the previous action": "sup-orig-s{seed}", "without it": "sup-orig-s{seed}-noprev"}


def collect_starts(runs: Path, seeds: list[int]) -> list[dict]:
    """Each supervised start's rows, labelled by whether its network reads the previous action."""
    rows = []
    for label, pattern in STARTS.items():
        for seed in seeds:
            rows += [{**row, "input": label} for row in run_rows(runs / pattern.format(seed=seed), seed, "supervised")]
    return rows


def plot_starts(rows: list[dict], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(8, 4.8), dpi=120)
    colours = plt.get_cmap("tab10").colors
    for (label, seed), colour in zip(sorted({(r["input"], r["seed"]) for r in rows}), colours):
        line = sorted((r for r in rows if (r["input"], r["seed"]) == (label, seed)), key=lambda r: r["epoch"])
        epochs = [r["epoch"] + 1 for r in line]
        axis.plot(epochs, [r["dev_mean"] for r in line], "o-", color=colour, label=f"{label}, seed {seed}, dev")
        tuning = [(r["epoch"] + 1, r["tuning"]) for r in line if r.get("tuning") is not None]
        if tuning:
            axis.plot(*zip(*tuning), "x:", color=colour, alpha=0.6, label=f"{label}, seed {seed}, tuning")
    paper_line(axis, PAPER_DEV["supervised, paper"], "supervised, paper (dev)")
    axis.xaxis.get_major_locator().set_params(integer=True)
    axis.legend(fontsize=8)
    save(figure, axis, out, "supervised epochs (docs/blocks_environment.md §6.4: one step per demonstration, 11,196 per epoch)",
         "mean distance error, greedy (block lengths)", "Blocks, supervised starts with and without the previous-action input")


def export(run_dir: Path, out: Path | None) -> Path:
    """Saves the bandit run's best-by-dev epoch with ``save_pretrained``; returns where."""
    from zoo.models.blocks.policy import load_training_checkpoint

    rows = run_rows(run_dir, -1, "bandit")
    if not rows:
        raise SystemExit(f"blocks_seeds: {run_dir} has no metrics.jsonl with dev errors")
    best = min(rows, key=lambda r: r["dev_mean"])
    checkpoint = run_dir / "checkpoints" / f"epoch{best['epoch']:03d}.ckpt"
    if not checkpoint.is_file():
        raise SystemExit(f"blocks_seeds: {checkpoint} is missing")
    policy = load_training_checkpoint(checkpoint)
    out = out or run_dir / "best-dev"
    policy.save_pretrained(out)
    print(f"epoch {best['epoch']} (dev {best['dev_mean']:.3f}, tuning {best['tuning']:.3f}) -> {out}")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    report = commands.add_parser("report", help="per-epoch table, best epochs, learning-curve plot")
    report.add_argument("--runs", type=Path, default=Path("runs/blocks"))
    report.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    report.add_argument("--recorded", type=Path, help="rows of seeds whose run directories are gone")
    report.add_argument("--json", type=Path, help="write the rows and each seed's best epoch here")
    report.add_argument("--plot", type=Path, help="write the learning curves here (PNG)")
    starts = commands.add_parser("starts", help="supervised starts with and without the previous-action input")
    starts.add_argument("--runs", type=Path, default=Path("runs/blocks"))
    starts.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    starts.add_argument("--json", type=Path, help="write the rows here")
    starts.add_argument("--plot", type=Path, help="write the curves here (PNG)")
    exporting = commands.add_parser("export", help="save a bandit run's best epoch by dev")
    exporting.add_argument("run_dir", type=Path)
    exporting.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.command == "export":
        export(args.run_dir, args.out)
        return
    if args.command == "starts":
        rows = collect_starts(args.runs, args.seeds)
        print(f"{'input':<25} {'seed':>4} {'epoch':>5} {'tuning':>7} {'dev mean':>8} {'median':>7} {'moves':>5}")
        for row in rows:
            tuning = "-" if row.get("tuning") is None else f"{row['tuning']:.3f}"
            moves = "-" if row.get("dev_decisions") is None else f"{row['dev_decisions']:.1f}"
            print(f"{row['input']:<25} {row['seed']:>4} {row['epoch']:>5} {tuning:>7} {row['dev_mean']:>8.3f} "
                  f"{row.get('dev_median') or 0:>7.3f} {moves:>5}")
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1) + "\n")
        if args.plot:
            plot_starts(rows, args.plot)
        return
    rows = collect(args.runs, args.seeds, args.recorded)
    best = best_by_dev(rows)
    print(f"{'seed':>4} {'stage':<10} {'epoch':>5} {'tuning':>7} {'dev mean':>8} {'median':>7} {'closest':>7} "
          f"{'moves':>5} {'hours':>6}")

    def number(value, digits: int = 3) -> str:
        return "-" if value is None else f"{value:.{digits}f}"

    for row in rows:
        hours = f"{row['train_seconds'] / 3600:.2f}" if row.get("train_seconds") else "-"
        mark = " *" if best.get(row["seed"]) is row else ""
        print(f"{row['seed']:>4} {row['stage']:<10} {row['epoch']:>5} {number(row.get('tuning')):>7} "
              f"{row['dev_mean']:>8.3f} {number(row.get('dev_median')):>7} {number(row.get('dev_min_mean')):>7} "
              f"{number(row.get('dev_decisions'), 1):>5} {hours:>6}{mark}")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "best_by_dev": {str(k): v for k, v in best.items()}},
                                        indent=1) + "\n")
    if args.plot:
        plot(rows, args.plot)


if __name__ == "__main__":
    main()
