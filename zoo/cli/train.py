"""``zoo train NAME [key=value ...]``: run a recipe shipped in the package (``zoo/recipes/``), named
for the model it trains (``zoo train light-bi-ranker``), or a recipe file of one's own.

``zoo train --list`` names every recipe with its one-line description; ``zoo train NAME
--help`` prints the recipe's keys and defaults (the same text as the thin script of a
checkout, ``python recipes/light_bi.py --help``); the overrides, ``--config FILE`` and
``--verbose`` are the recipe's own (:func:`zoo.experiment.load_config`). ``NAME`` may also be a
YAML file (``zoo train my_models/light_word_overlap.yaml --import my_models.word_overlap``): its
``model.name`` is any registered model, ``--import MODULE`` imports the module that registers it,
and the file is merged over its domain's common recipe (docs/architecture.md, "Adding a model").
Every recipe runs through :func:`zoo.training.runner.run`, imported only when a recipe runs, so
``zoo --help`` loads no torch.
"""

from __future__ import annotations

import argparse
import importlib

from zoo.recipes import describe, list_recipes


def add_commands(commands, eval_domains) -> None:
    train = commands.add_parser(
        "train", help="train a recipe shipped with zoo (zoo train --list)",
        description="Train a recipe shipped with zoo, or a recipe YAML file: zoo train NAME [key.sub=value ...] "
                    "[--config FILE] [--verbose] [--import MODULE]; zoo train NAME --help prints its keys.")
    train.add_argument("--list", action="store_true", help="list every recipe with a one-line description")
    train.add_argument("--tiny", action="store_true",
                       help="the whole pipeline in seconds: a few generated examples, a small network, one epoch, "
                            "run_dir runs/tiny/... (zoo/recipes/tiny/)")
    train.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                       help="import MODULE first: a module registering the model a recipe file names")
    train.add_argument("name", nargs="?", metavar="NAME",
                       help="a recipe name (the model's, e.g. light-bi-ranker or blocks-bandit) or a recipe YAML file")
    train.add_argument("overrides", nargs=argparse.REMAINDER, metavar="key=value",
                       help="dotted overrides of the recipe's keys (and --config FILE, --help, --verbose)")
    train.set_defaults(handler=run_train)


def recipe_lines() -> list[str]:
    names = list_recipes()
    width = max(map(len, names))
    return [f"{name:<{width}}  {describe(name)}" for name in names]


def split_flags(args) -> tuple[list[str], bool, list[str]]:
    """The recipe's own overrides, whether ``--tiny`` and the ``--import`` modules: the flags may
    also come after NAME, among the overrides."""
    overrides, tiny, imports = [], args.tiny, list(args.imports)
    values = iter(args.overrides)
    for value in values:
        if value == "--tiny":
            tiny = True
        elif value == "--import":
            imports.append(next(values, None) or "")
            if not imports[-1]:
                raise ValueError("--import needs a module name")
        else:
            overrides.append(value)
    return overrides, tiny, imports


def run_train(args) -> int:
    if args.list or not args.name:
        print("\n".join(recipe_lines()))
        return 0
    overrides, tiny, imports = split_flags(args)
    for module in imports:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as error:
            raise ValueError(f"--import {module}: no module named {error.name!r} (is its folder on PYTHONPATH?)") \
                from None
    from zoo.training.runner import recipe_paths  # an unknown name: KeyError, one line naming the recipes

    files = recipe_paths(args.name, tiny=tiny)
    if "--help" in overrides or "-h" in overrides:  # the recipe's keys, under this command's usage line
        from zoo.experiment import print_help

        print_help(files, f"zoo train {args.name}")
        return 0
    from zoo.training.runner import run

    run(files, overrides)
    return 0
