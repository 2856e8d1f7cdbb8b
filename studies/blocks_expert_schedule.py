"""How fast DAgger or SPO learns from the shortest-path expert: a short, fixed-budget run.

The setting of ``studies/blocks_bandit_schedule.py``, so the curves compare: the released
``blocks-supervised`` policy as the start, the same shuffled training episodes for the same
seed, rollouts of ``--rollout`` episodes at a time; the greedy tuning error on the first
``--tuning`` tuning examples every ``--eval-every`` episodes. One line of JSON per evaluation
(``--json``, and appended to ``--out``), then a summary object.

    python studies/blocks_expert_schedule.py --episodes 4000 --out dagger.jsonl
    python studies/blocks_expert_schedule.py --method spo --episodes 4000 --out spo.jsonl

``--method dagger``: rollouts mixing the expert and the policy (β), every visited state
labelled, cross-entropy on a replay of the newest labels (``zoo train blocks-dagger``).
``--method spo``: every episode a trial sampled from the policy; the trials worse than the mean
error of the last ``--window`` clone the expert's demonstration, the rest take PPO steps
(``zoo train blocks-spo``). Every option maps to a key of that recipe.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import torch

# The learning curve is the one studies/support/tuning_curve.py keeps, so every method's curve compares.
sys.path.insert(0, str(Path(__file__).resolve().parent / "support"))
from tuning_curve import TuningCurve  # noqa: E402

from zoo.blocks.datamodule import BlocksDataModule  # noqa: E402
from zoo.blocks.rollout import EpisodeRunner  # noqa: E402
from zoo.callbacks.expert_loop import ExpertLoop  # noqa: E402
from zoo.callbacks.objective_loops import loop_callbacks  # noqa: E402
from zoo.models.blocks import BlocksDagger, BlocksPolicy, BlocksSpo  # noqa: E402
from zoo.models.blocks.policy import load_training_checkpoint  # noqa: E402


def parse(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--init-from", default="blocks-supervised",
                        help="released name, save_pretrained directory, or a supervised run's .ckpt")
    parser.add_argument("--method", choices=("dagger", "spo"), default="dagger")
    parser.add_argument("--episodes", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=None, help="stop at the first evaluation after this long")
    parser.add_argument("--rollout", type=int, default=16, help="episodes rolled out at once (one policy)")
    parser.add_argument("--lr", type=float, default=None, help="default: 1e-3 for DAgger, 1e-4 for SPO")
    parser.add_argument("--previous-action", action="store_true",
                        help="give the policy the previous-action input (added, seeded, when the start lacks it)")
    parser.add_argument("--beta-start", type=float, default=1.0)
    parser.add_argument("--beta-decay", type=float, default=0.99, help="per rollout")
    parser.add_argument("--beta-end", type=float, default=0.0)
    parser.add_argument("--stop-weight", type=float, default=1.0, help="the STOP labels' weight against the moves'")
    parser.add_argument("--clip", type=float, default=0.05, help="SPO: PPO's ratio range [1 - clip, 1 + clip]")
    parser.add_argument("--ppo-epochs", type=int, default=4, help="SPO: optimizer steps per rollout")
    parser.add_argument("--window", type=int, default=100, help="SPO: trials the moving baseline averages")
    parser.add_argument("--entropy", type=float, default=0.01, help="SPO: the entropy bonus of the PPO steps")
    parser.add_argument("--policy-actions", choices=("greedy", "sample"), default="greedy")
    parser.add_argument("--replay-size", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--updates-per-rollout", type=int, default=None, help="default: one per episode")
    parser.add_argument("--tuning", type=int, default=300)
    parser.add_argument("--eval-every", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, help="append the JSON lines to this file as well")
    parser.add_argument("--save", type=Path, help="save the final policy here (save_pretrained)")
    parser.add_argument("--json", action="store_true")
    return parser.parse_args(argv)


def mean_of_numbers(values: list[float]) -> float:
    """The mean of the values that are not NaN (a rollout where the policy never acted has none)."""
    numbers = [v for v in values if not math.isnan(v)]
    return sum(numbers) / len(numbers) if numbers else float("nan")


def main(argv=None) -> dict:
    args = parse(argv)
    torch.set_num_threads(args.threads)
    datamodule = BlocksDataModule(source="real")
    datamodule.setup()
    if str(args.init_from).endswith(".ckpt"):
        start = load_training_checkpoint(args.init_from)
    else:
        start = BlocksPolicy.from_pretrained(args.init_from)
    if args.previous_action and not start.hparams.use_previous_action:
        torch.manual_seed(args.seed)
        start = start.with_previous_action_input()
    if args.method == "spo":
        args.lr = args.lr or 1e-4
        policy = start.to_objective(BlocksSpo, learning_rate=args.lr, stop_weight=args.stop_weight, clip=args.clip,
                                    ppo_epochs=args.ppo_epochs, baseline_window=args.window,
                                    entropy_coefficient=args.entropy)
        (loop,) = loop_callbacks(policy, datamodule, {}, args.seed)  # the recipe's ScheduledLoop for these settings
    else:
        args.lr = args.lr or 1e-3
        policy = start.to_objective(BlocksDagger, learning_rate=args.lr, stop_weight=args.stop_weight)
        loop = ExpertLoop(datamodule.train_examples, seed=args.seed, renderer=datamodule.renderer,
                          beta_start=args.beta_start, beta_decay=args.beta_decay, beta_end=args.beta_end,
                          policy_actions=args.policy_actions, replay_size=args.replay_size,
                          batch_size=args.batch_size, updates_per_rollout=args.updates_per_rollout)
    optimizer = policy.configure_optimizers()
    order = torch.randperm(len(datamodule.train_examples), generator=torch.Generator().manual_seed(args.seed))
    episodes = [datamodule.train_examples[i] for i in order[: args.episodes].tolist()]
    tuning = datamodule.tuning_examples[: args.tuning]
    config = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if k not in ("json", "out")}
    curve = TuningCurve(policy, tuning, EpisodeRunner(datamodule.renderer), config, args.eval_every, args.out, args.json)
    recent: list[dict] = []  # each rollout's loop statistics

    def method_stats() -> dict:
        """Since the last evaluation. DAgger: β and how often the policy's own actions were the
        expert's (NaN, null in JSON, before the policy acts); SPO: the moving baseline and the
        share of trials cloned."""
        window = recent[-max(1, args.eval_every // args.rollout):]
        if args.method == "spo":
            return {"baseline": recent[-1]["baseline"] if recent else float("nan"),
                    "cloned_share": mean_of_numbers([s["cloned_share"] for s in window])}
        return {"beta": loop.beta(), "policy_agreement": mean_of_numbers([s["policy_agreement"] for s in window])}

    curve.evaluate(0, **method_stats())
    for first in range(0, len(episodes), args.rollout):
        batch = episodes[first : first + args.rollout]
        if args.method == "spo":
            trials = loop.collect(policy, batch)
            policy.train()
            policy.update(trials, optimizer)
            demonstrations = trials.demonstrations
            curve.record(trials.rollout, loop.trials.runner.env.stopped, args.ppo_epochs, len(batch),
                         other_frames=len(demonstrations.actions) if demonstrations is not None else 0)
        else:
            labels = loop.collect(policy, batch)
            policy.train()
            policy.update(labels, optimizer)
            curve.record(labels.rollout, loop.runner.env.stopped, len(labels.minibatches), len(batch))
        recent.append(dict(loop.last_stats))
        if curve.evaluate_when_due(first + len(batch), len(episodes), args.seconds, **method_stats()):
            break
    if args.save:
        policy.save_pretrained(args.save)
    return curve.summary()


if __name__ == "__main__":
    main(sys.argv[1:])
    sys.exit(0)
