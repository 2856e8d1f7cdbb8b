"""``zoo light ...`` subcommands and ``zoo eval light``: the ``examples`` command, which prints
flattened examples of a LIGHT corpus, and the registration of the others, each in the module
named for it: ``sim`` and ``stats`` (:mod:`zoo.cli.light_corpus`), ``generate``
(:mod:`zoo.cli.light_generate`), ``neighbors`` (:mod:`zoo.cli.light_neighbors`) and
``zoo eval light`` (:mod:`zoo.cli.light_eval`).
"""

from __future__ import annotations

import json
import pickle
import sys

from zoo.light.candidates import CandidateOptions
from zoo.light.features import FEATURE_SETS
from zoo.light.records import LightDataError
from zoo.light.release import SPLITS, load_episodes, load_release, split_light_data

TASK_CHOICES = ("dialogue", "action", "emote", "which")
SPLIT_CHOICES = SPLITS + ("all",)


def add_commands(subparsers, eval_subparsers) -> None:
    """Register ``zoo light`` (examples, sim, stats, neighbors) and ``zoo eval light``."""
    light = subparsers.add_parser("light", help="LIGHT (Urbanek et al. 2019): data tools")
    commands = light.add_subparsers(dest="light_command", required=True)
    from zoo.cli.light_corpus import add_sim_command, add_stats_command
    from zoo.cli.light_eval import add_eval_command
    from zoo.cli.light_generate import add_generate_command
    from zoo.cli.light_neighbors import add_neighbors_command

    add_sim_command(commands)
    add_stats_command(commands)
    add_neighbors_command(commands)
    add_eval_command(eval_subparsers)
    add_generate_command(commands)
    examples = commands.add_parser(
        "examples",
        help="print the flattened examples of a LIGHT corpus",
        description="Flatten LIGHT episodes into ParlAI light_dialog examples. Without --pickle the "
        "official release is read (--data-dir, $ZOO_DATA_DIR/light or the cache; --download fetches it).",
    )
    source = examples.add_argument_group("source")
    source.add_argument("--pickle", help="a dialogue pickle in the release schema (light_data.pkl, the unseen "
                        "file, or a corpus of our own); train/valid/test apply ParlAI's split rule to it, "
                        "test_unseen and all take the whole file")
    source.add_argument("--data-dir", help="directory holding light_data.pkl and light_unseen_data.pkl")
    source.add_argument("--download", action="store_true", help="download missing release files")
    source.add_argument("--no-verify", action="store_true",
                        help="skip the sha256 check (needed for corpora without a published hash, e.g. the "
                        "fixture or LIGHT-sim); unpickling stays restricted to plain data")
    examples.add_argument("--task", choices=TASK_CHOICES, default="dialogue")
    examples.add_argument("--split", choices=SPLIT_CHOICES, default="all")
    examples.add_argument("--features", choices=sorted(FEATURE_SETS), default="parlai_default",
                          help="named feature set (default: ParlAI's DefaultTeacher)")
    examples.add_argument("--jsonl", action="store_true",
                          help="one JSON object per line (text, label, candidates, episode_done) instead of "
                          "ParlAI's dialog-text lines")
    examples.add_argument("--limit", type=int, default=None, help="print at most N examples")
    cands = examples.add_argument_group("candidates")
    cands.add_argument("--candidates", type=int, default=20, help="speech list size, gold included (20)")
    cands.add_argument("--no-affordances", action="store_true", help="action candidates ignore object properties")
    cands.add_argument("--emote-candidates", choices=("fixed", "split"), default="fixed",
                       help="the 22 emotes (fixed) or the split's emotes in first-occurrence order (split)")
    cands.add_argument("--seed", type=int, default=42, help="speech candidate RNG seed (42, as ParlAI)")
    examples.set_defaults(handler=_examples)


def _examples(args) -> int:
    from zoo.light.examples import build_all_examples, build_split_examples

    if args.limit is not None and args.limit < 0:
        print("zoo light examples: error: --limit must be >= 0", file=sys.stderr)
        return 2
    options = CandidateOptions(
        num_speech=args.candidates, affordances=not args.no_affordances, emotes=args.emote_candidates,
        seed=args.seed,
    )
    try:
        splits = _load(args)
        if args.split == "all" and args.pickle is None:
            examples = build_all_examples(splits, args.task, args.features, options)
        else:
            examples = build_split_examples(splits, args.split, args.task, args.features, options)
    except (LightDataError, OSError, pickle.UnpicklingError, ValueError) as error:
        from zoo.cli.messages import cli_words

        print(f"zoo light examples: error: {cli_words(error)}", file=sys.stderr)
        return 2
    if args.limit is not None:
        examples = examples[: args.limit]
    try:
        for example in examples:
            line = json.dumps(example.to_json(), ensure_ascii=False) if args.jsonl else example.to_parlai_line()
            sys.stdout.write(line + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. piped into head
        sys.stderr.close()
    return 0


def _load(args) -> dict:
    """The splits the command needs: the whole release, or the splits of one file."""
    if args.pickle is None:
        return load_release(args.data_dir, args.download, verify=not args.no_verify)
    episodes = load_episodes(args.pickle, verify=not args.no_verify)
    if args.split in ("train", "valid", "test"):
        return split_light_data(episodes)
    return {args.split: episodes}
