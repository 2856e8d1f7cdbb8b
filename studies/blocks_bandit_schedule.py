"""How fast the contextual bandit learns under one update schedule: a short, fixed-budget run.

The setting of docs/blocks.md's schedule table: the released ``blocks-supervised`` policy with its
direction head re-initialised, the same shuffled training episodes for every schedule,
rollouts sampled ``--rollout`` episodes at a time, Adam, clipping at 5, entropy 0.1; the
greedy tuning error on the first ``--tuning`` tuning examples every ``--eval-every``
episodes. One line of JSON per evaluation (``--json``), then a summary object.

    python studies/blocks_bandit_schedule.py --episodes-per-update 16            # pooled, today's
    python studies/blocks_bandit_schedule.py --episodes-per-update 1             # the paper's
    python studies/blocks_bandit_schedule.py --episodes-per-update 1 --init original --loss-form original

Every option maps to a ``BlocksBandit`` hyper-parameter, so a schedule that wins here is the
recipe's by config alone.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

# The learning curve is the one studies/support/tuning_curve.py keeps, so every method's curve compares.
sys.path.insert(0, str(Path(__file__).resolve().parent / "support"))
from tuning_curve import TuningCurve  # noqa: E402

from zoo.blocks.datamodule import BlocksDataModule  # noqa: E402
from zoo.blocks.rollout import EpisodeRunner  # noqa: E402
from zoo.callbacks.contextual_bandit import ContextualBanditLoop  # noqa: E402
from zoo.models.blocks import BlocksBandit, BlocksPolicy  # noqa: E402
from zoo.models.blocks.policy import load_training_checkpoint  # noqa: E402


def parse(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--init-from", default="blocks-supervised",
                        help="released name, save_pretrained directory, or a supervised run's .ckpt")
    parser.add_argument("--episodes", type=int, default=2000)
    parser.add_argument("--rollout", type=int, default=16, help="episodes sampled at once (one policy)")
    parser.add_argument("--episodes-per-update", type=int, default=1)
    parser.add_argument("--update-weighting", choices=("steps", "episodes"), default="steps",
                        help="mean over the pooled steps, or each episode's mean averaged (the original's)")
    parser.add_argument("--reward-baseline", choices=("none", "mean"), default="none",
                        help="subtract each update's mean reward (not the paper's)")
    parser.add_argument("--lr", type=float, default=2.5e-4)
    parser.add_argument("--entropy", type=float, default=0.1)
    parser.add_argument("--init", choices=("glorot", "original"), default="original",
                        help="scheme of the re-initialised direction head")
    parser.add_argument("--loss-form", choices=("original", "joint"), default="original")
    parser.add_argument("--clip", choices=("per_parameter", "global"), default="per_parameter")
    parser.add_argument("--reset-direction-head", type=int, default=1)
    parser.add_argument("--feature-scale", type=float, default=1.0,
                        help="multiply the 120-d features both heads read by this (the block head compensates, "
                             "so its probabilities are unchanged): a test of how their scale sets the step size")
    parser.add_argument("--tuning", type=int, default=300)
    parser.add_argument("--eval-every", type=int, default=400)
    parser.add_argument("--seconds", type=float, default=None, help="stop at the first evaluation after this long")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, help="append the JSON lines to this file as well")
    parser.add_argument("--save", type=Path, help="save the final policy here (save_pretrained), e.g. for "
                        "studies/blocks_stop_probe.py")
    parser.add_argument("--json", action="store_true")
    return parser.parse_args(argv)


def main(argv=None) -> dict:
    args = parse(argv)
    torch.set_num_threads(args.threads)
    datamodule = BlocksDataModule(source="real")
    datamodule.setup()
    options = dict(learning_rate=args.lr, entropy_coefficient=args.entropy, init=args.init,
                   loss_form=args.loss_form, episodes_per_update=args.episodes_per_update, gradient_clip_algorithm=args.clip,
                   update_weighting=args.update_weighting, reward_baseline=args.reward_baseline)
    if str(args.init_from).endswith(".ckpt"):  # a supervised run's epoch checkpoint
        policy = load_training_checkpoint(args.init_from).to_objective(BlocksBandit, **options)
    else:
        policy = BlocksPolicy.from_pretrained(args.init_from).to_objective(BlocksBandit, **options)
    if args.feature_scale != 1.0:  # ReLU is positively homogeneous: relu(c·z) = c·relu(z)
        with torch.no_grad():
            policy.hidden.weight.mul_(args.feature_scale)
            policy.hidden.bias.mul_(args.feature_scale)
            policy.block_head.weight.div_(args.feature_scale)
    torch.manual_seed(args.seed)
    if args.reset_direction_head:
        policy.reset_direction_head()
    optimizer = policy.configure_optimizers()
    loop = ContextualBanditLoop(datamodule.train_examples, seed=args.seed, renderer=datamodule.renderer,
                                demo_cache=datamodule.demos)
    order = torch.randperm(len(datamodule.train_examples), generator=torch.Generator().manual_seed(args.seed))
    episodes = [datamodule.train_examples[i] for i in order[: args.episodes].tolist()]
    tuning = datamodule.tuning_examples[: args.tuning]
    config = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if k not in ("json", "out")}
    curve = TuningCurve(policy, tuning, EpisodeRunner(datamodule.renderer), config, args.eval_every, args.out, args.json)
    curve.evaluate(0)
    for first in range(0, len(episodes), args.rollout):
        batch = episodes[first : first + args.rollout]
        rollout = loop.collect(policy, batch)
        policy.train()
        policy.update(rollout, optimizer)
        curve.record(rollout, loop.runner.env.stopped, -(-len(batch) // args.episodes_per_update), len(batch))
        if curve.evaluate_when_due(first + len(batch), len(episodes), args.seconds):
            break
    if args.save:
        policy.save_pretrained(args.save)
    return curve.summary()


if __name__ == "__main__":
    main(sys.argv[1:])
    sys.exit(0)
