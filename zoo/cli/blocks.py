"""``zoo eval blocks`` and ``zoo blocks ...`` commands."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from zoo.cli.arguments import add_threads_argument, positive_int
from zoo.loading import load_policies, load_policy



def add_commands(commands, eval_domains) -> None:
    evaluate = eval_domains.add_parser("blocks", help="distance error of a policy on the Blocks benchmark")
    evaluate.add_argument("--model", nargs="+", default=["stop"],
                          help="stop | random | demonstrations | a released name | a checkpoint directory | a run's .ckpt; "
                               "several learned policies form an ensemble (averaged action probabilities)")
    _add_data_arguments(evaluate)
    evaluate.add_argument("--seed", type=int, default=0,
                          help="seed of stochastic policies (random) and of the episodes --limit draws (0)")
    evaluate.add_argument("--batch-size", type=positive_int, default=256)
    evaluate.add_argument("--limit", type=positive_int, default=None,
                          help="evaluate N episodes drawn over the split with --seed (the split's first N are "
                          "only a layout or two)")
    evaluate.add_argument("--first", action="store_true", help="with --limit: the split's first N episodes instead")
    evaluate.add_argument("--save", type=Path, default=None,
                          help="also write the evaluated policy as a save_pretrained directory (several models: "
                          "the ensemble, one model to release; new, empty, or a model zoo saved)")
    evaluate.add_argument("--versus", nargs="+", metavar="MODEL",
                          help="a second policy (any --model value; several: an ensemble): also report the first's "
                          "mean error minus the second's over the same episodes, with a paired bootstrap interval")
    evaluate.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    add_threads_argument(evaluate, "small")
    evaluate.set_defaults(handler=run_eval)

    blocks = commands.add_parser("blocks", help="Blocks world tools")
    tools = blocks.add_subparsers(dest="tool", required=True)
    render = tools.add_parser("render", help="write a GIF/PNG of an episode: start, goal and a policy's rollout")
    _add_data_arguments(render)
    render.add_argument("--index", type=int, default=0, help="example index within the split")
    render.add_argument("--model", default="demonstrations", help="the policy to roll out (as for eval)")
    render.add_argument("--seed", type=int, default=0)
    render.add_argument("--out", type=Path, required=True, help="output .gif or .png (a new file: an existing one is refused)")
    add_threads_argument(render, "small")
    render.set_defaults(handler=run_render)


def _add_data_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--split", choices=("train", "dev", "test"), default="dev")
    parser.add_argument("--data-dir", default=None, help="directory with {train,dev,test}set.json "
                        "(default: $ZOO_DATA_DIR/blocks, then the cache)")
    parser.add_argument("--download", action="store_true", help="download the release if it is not found")


def run_eval(args) -> int:
    from zoo.blocks.evaluate import evaluate_policy
    from zoo.blocks.sources import open_split
    from zoo.bootstrap import Bootstrap
    from zoo.metrics import DistanceError
    from zoo.subset import describe_subset, subset_indices, subset_words
    from zoo.threads import current_choice

    if args.first and args.limit is None:
        raise ValueError("--first needs --limit, the number of episodes")
    split, source = open_split(args.split, args.data_dir, args.download)
    policy = load_policies(args.model, args.seed)
    if args.save is not None:
        from zoo.files import check_replaceable

        check_replaceable(args.save, kind="model")  # before the evaluation, not after
    other = load_policies(args.versus, args.seed) if args.versus else None  # a bad name fails before the work
    chosen = subset_indices(len(split.examples), args.limit, args.seed, args.first)
    examples = [split.examples[i] for i in chosen]
    bootstrap, errors = Bootstrap(), DistanceError()
    result = evaluate_policy(policy, examples, batch_size=args.batch_size, progress=True, metric=errors)
    # the mean's interval over episodes: is a gap to another figure more than the split's noise?
    result["mean_low"], result["mean_high"] = bootstrap.interval(errors.final_errors().tolist())
    summary = {"model": " + ".join(args.model), "split": args.split, "data": source, **result}
    summary["n"] = int(summary["n"])
    summary["episodes"] = describe_subset(len(examples), len(split.examples), args.seed, args.first)
    summary["threads"] = current_choice().threads
    versus = ""
    if other is not None:
        other_errors = DistanceError()
        other_result = evaluate_policy(other, examples, batch_size=args.batch_size, progress=True, metric=other_errors)
        difference, (low, high) = bootstrap.paired(errors.final_errors().tolist(), other_errors.final_errors().tolist())
        summary["versus"] = {"model": " + ".join(args.versus), "mean": other_result["mean"],
                             "median": other_result["median"], "difference": difference, "ci95": [low, high],
                             "bootstrap": bootstrap.describe()}
        versus = (f"; minus {summary['versus']['model']} ({other_result['mean']:.3f}): {difference:+.3f} "
                  f"[{low:+.3f}, {high:+.3f}] paired")
    # With --json, stdout holds the JSON object alone; the human line goes to stderr.
    print(f"Blocks {args.split} ({source} data), {summary['model']}: distance error mean {result['mean']:.3f} "
          f"[95% {result['mean_low']:.3f}, {result['mean_high']:.3f}] / "
          f"median {result['median']:.3f}; minimum distance mean {result['min_mean']:.3f} / "
          f"median {result['min_median']:.3f}; {subset_words(summary['episodes'], 'episodes')} "
          f"({result['stop_rate']:.0%} ended by STOP), "
          f"{result['steps']} steps in "
          f"{result['seconds']:.1f}s on {current_choice()}{versus}", file=sys.stderr if args.json else sys.stdout)
    if args.save is not None:
        policy.save_pretrained(args.save)
        print(f"saved {summary['model']} to {args.save}", file=sys.stderr if args.json else sys.stdout)
    if args.json:
        print(json.dumps(summary))
    return 0


def run_render(args) -> int:
    from zoo.blocks.episode_animation import render_episode
    from zoo.blocks.sources import open_split
    from zoo.files import check_new_file

    check_new_file(args.out)  # before the data and the policy load, not after
    split, source = open_split(args.split, args.data_dir, args.download)
    if not 0 <= args.index < len(split.examples):
        raise SystemExit(f"--index must be in 0..{len(split.examples) - 1} for the {args.split} split")
    policy = load_policy(args.model, args.seed)
    path = render_episode(policy, split.examples[args.index], args.out, data_dir=args.data_dir, replace=False)
    print(f"wrote {path} ({source} data, {args.split} example {args.index}, policy {args.model})")
    return 0
