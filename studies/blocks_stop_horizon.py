"""What stopping is worth to a Blocks policy that never stops: its error after each move.

    python studies/blocks_stop_horizon.py blocks-bandit runs/blocks/bandit-s1/best-dev runs/blocks/bandit-s2/best-dev \
        --labels "seed 0 (blocks-bandit)" "seed 1" "seed 2" --json --plot docs/results/blocks_stop_horizon.png

Our bandit policies' greedy episodes never end by STOP: each runs to the 40-move horizon and
ends farther from the goal than its closest point on the way (dev closest-point means 3.3-3.7
against final errors 3.86-4.35; the paper's final error is 3.60). This measures what a stopping
rule would give without retraining: each policy plays its greedy episodes once, and the
distance error of every episode is recorded after every move, so "stop after k moves" can be
scored for every k. The k is chosen on the tuning examples (held out of the training split, as
training's own selection uses them) and reported on dev, so the dev
figure is not tuned on dev; the curve on dev is plotted for both. A policy whose curve falls
below the paper's line at some k has learned to get there; what it lacks is when to stop.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

HORIZON = 40


@torch.no_grad()
def error_by_move(policy, examples, batch_size: int = 256) -> torch.Tensor:
    """``[HORIZON + 1, N]``: each episode's distance error after 0..40 moves of its greedy
    rollout (an episode that ended, by STOP or the horizon, keeps its final error)."""
    from zoo.blocks.evaluate import greedy_actions, play_greedily
    from zoo.blocks.rollout import EpisodeRunner

    runner, columns = EpisodeRunner(), []
    policy.eval()
    for start in range(0, len(examples), batch_size):
        batch = examples[start : start + batch_size]
        errors, act = [], greedy_actions(policy)

        def recording(observation):  # called before each decision: the error so far
            errors.append(runner.env.error().clone())
            return act(observation)

        play_greedily(runner, policy, batch, recording)
        errors.append(runner.env.error().clone())
        errors += [errors[-1]] * (HORIZON + 1 - len(errors))
        columns.append(torch.stack(errors[: HORIZON + 1]))
    return torch.cat(columns, dim=1).float()


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("policies", nargs="+", help="released names, save_pretrained directories or .ckpt files")
    parser.add_argument("--tuning-limit", type=int, default=0, help="first N tuning examples choose k (0: all)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--plot", type=Path, help="write the dev curves here (PNG; needs matplotlib)")
    parser.add_argument("--labels", nargs="+", help="the policies' names in the plot (default: as given)")
    parser.add_argument("--json", action="store_true", help="one JSON object per policy")
    args = parser.parse_args(argv)
    if args.labels and len(args.labels) != len(args.policies):
        parser.error(f"{len(args.labels)} labels for {len(args.policies)} policies")
    torch.set_num_threads(args.threads)
    from zoo.blocks.datamodule import BlocksDataModule
    from zoo.loading import load_policy

    data = BlocksDataModule(source="real")
    data.setup()
    tuning = data.tuning_examples[: args.tuning_limit] if args.tuning_limit else data.tuning_examples
    dev = data.dev_examples
    results, curves = [], {}
    for name, label in zip(args.policies, args.labels or args.policies):
        policy = load_policy(name)
        on_tuning, on_dev = error_by_move(policy, tuning).mean(1), error_by_move(policy, dev)
        k = int(on_tuning.argmin())
        curve = on_dev.mean(1)
        result = {"policy": name, "dev_final": round(float(curve[-1]), 3),
                  "dev_closest_point": round(float(on_dev.min(0).values.mean()), 3),
                  "k_chosen_on_tuning": k, "dev_stopping_after_k": round(float(curve[k]), 3),
                  "dev_median_stopping_after_k": round(float(on_dev[k].median()), 3),
                  "dev_best_k": int(curve.argmin()), "dev_at_best_k": round(float(curve.min()), 3),
                  "tuning_examples": len(tuning), "dev_examples": len(dev),
                  "dev_mean_by_move": [round(float(x), 3) for x in curve]}
        results.append(result)
        curves[label] = curve
        print(json.dumps(result) if args.json else
              f"{name}: dev {result['dev_final']:.3f} after 40 moves; stopping after k={k} moves (chosen on "
              f"tuning) {result['dev_stopping_after_k']:.3f}; closest point {result['dev_closest_point']:.3f}",
              flush=True)
    if args.plot:
        plot(curves, results, args.plot)
    return results


def plot(curves: dict, results: list[dict], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(8, 4.6), dpi=120)
    for (name, curve), result in zip(curves.items(), results):
        line, = axis.plot(range(len(curve)), curve.tolist(), label=name)
        k = result["k_chosen_on_tuning"]
        axis.plot([k], [float(curve[k])], "o", color=line.get_color())
    axis.axhline(3.60, color="grey", linestyle="--", linewidth=1)
    axis.annotate("paper, F1+F2 (dev)", (len(next(iter(curves.values()))) - 1, 3.60), xytext=(-4, 3),
                  textcoords="offset points", ha="right", color="grey", fontsize=8)
    axis.set_xlabel("moves before stopping (greedy rollout; dot: k chosen on tuning)")
    axis.set_ylabel("dev mean distance error (block lengths)")
    axis.set_title("Blocks: the error a fixed stopping point would leave")
    axis.legend(fontsize=8)
    axis.grid(alpha=0.3)
    figure.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out)


if __name__ == "__main__":
    main(sys.argv[1:])
