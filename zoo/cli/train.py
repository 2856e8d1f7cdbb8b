"""``zoo train NAME [key=value ...]``: run a recipe shipped in the package (``zoo/recipes/``).

``zoo train --list`` names every recipe with its one-line description; ``zoo train NAME
--help`` prints the recipe's keys and defaults (the same text as the thin script of a
checkout, ``python recipes/light_bi.py --help``); the overrides, ``--config FILE`` and
``--verbose`` are the recipe's own (:func:`zoo.experiment.load_config`). The runner is the
recipe's domain's: :mod:`zoo.training.light` or :mod:`zoo.training.blocks`, imported only
when a recipe runs, so ``zoo --help`` loads no torch.
"""

from __future__ import annotations

import argparse
import importlib

from zoo.recipes import describe, domain_of, list_recipes, recipe_files

RUNNERS = {"light": "light", "blocks": "blocks"}
"""Domain -> the module of ``zoo.training`` that runs its recipes."""


def add_commands(commands, eval_domains) -> None:
    train = commands.add_parser(
        "train", help="train a recipe shipped with zoo (zoo train --list)",
        description="Train a recipe shipped with zoo: zoo train NAME [key.sub=value ...] [--config FILE] "
                    "[--verbose]; zoo train NAME --help prints its keys.")
    train.add_argument("--list", action="store_true", help="list every recipe with a one-line description")
    train.add_argument("--tiny", action="store_true",
                       help="the whole pipeline in seconds: a few generated examples, a small network, one epoch, "
                            "run_dir runs/tiny/... (zoo/recipes/tiny/)")
    train.add_argument("name", nargs="?", metavar="NAME", help="a recipe name, e.g. light-bi or blocks-bandit")
    train.add_argument("overrides", nargs=argparse.REMAINDER, metavar="key=value",
                       help="dotted overrides of the recipe's keys (and --config FILE, --help, --verbose)")
    train.set_defaults(handler=run_train)


def recipe_lines() -> list[str]:
    names = list_recipes()
    width = max(map(len, names))
    return [f"{name:<{width}}  {describe(name)}" for name in names]


def run_train(args) -> int:
    if args.list or not args.name:
        print("\n".join(recipe_lines()))
        return 0
    domain = domain_of(args.name)  # an unknown name: KeyError, one line naming the recipes
    runner = importlib.import_module(f"zoo.training.{RUNNERS[domain]}")
    overrides = [value for value in args.overrides if value != "--tiny"]  # also after NAME, among the overrides
    files = recipe_files(args.name, tiny=args.tiny or len(overrides) < len(args.overrides))
    if "--help" in overrides or "-h" in overrides:  # the recipe's keys, under this command's usage line
        from zoo.experiment import print_help

        print_help(files, f"zoo train {args.name}")
        return 0
    if domain == "blocks":
        return int(runner.main(overrides, default_config=files) or 0)
    runner.run(overrides, files)
    return 0
