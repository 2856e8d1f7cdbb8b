"""The ``zoo`` command. Each area adds its own subcommands from a module of this package
(``zoo/cli/blocks.py``, ``light.py``, ``play.py``, ``train.py``).

The CLI joins the domains (``zoo.light``, ``zoo.blocks``) to the models: it may import both,
and neither domain imports it (``tests/test_layout.py``). Subcommand modules import torch,
Lightning and the models inside their handlers only, so ``zoo --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMAND_MODULES = ("zoo.cli.blocks", "zoo.cli.light", "zoo.cli.play", "zoo.cli.train")
"""Modules exposing ``add_commands(subparsers, eval_subparsers)``."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="zoo", description="Grounded-language model zoo: LIGHT and Blocks.")
    parser.add_argument("--verbose", action="store_true", help="keep the libraries' own logging and expected warnings")
    parser.add_argument("--version", action="version", version=f"zoo {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    evaluate = commands.add_parser("eval", help="evaluate a model or baseline on a benchmark")
    eval_domains = evaluate.add_subparsers(dest="domain", required=True)
    models = commands.add_parser("models", help="list registered models and released checkpoints")
    models.add_argument("pattern", nargs="?", default=None, help="shell pattern, e.g. 'blocks-*'")
    models.set_defaults(handler=_list_models)
    download = commands.add_parser("download", help="fetch released models ahead of time (verified, into $ZOO_CACHE)")
    download.add_argument("names", nargs="+", help="released names, or 'all'")
    download.set_defaults(handler=_download)
    for module_name in COMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name != module_name:
                raise
            continue
        module.add_commands(commands, eval_domains)
    return parser


def _version() -> str:
    from zoo import __version__

    return __version__


def _list_models(args) -> int:
    from zoo.hub import list_pretrained
    from zoo.factory import list_models

    print("models:", ", ".join(list_models(args.pattern)))
    print("pretrained:", ", ".join(list_pretrained()) or "(none released yet)")
    return 0


def _download(args) -> int:
    from zoo.hub import fetch_pretrained, list_pretrained, pretrained_entry

    names = list_pretrained() if args.names == ["all"] else args.names
    for name in names:
        entry = pretrained_entry(name)
        size = sum(f.size for f in entry.files)
        print(f"{name}: {len(entry.files)} files, {size / 1e6:.1f} MB", file=sys.stderr, flush=True)
        directory = fetch_pretrained(name, progress=True)
        print(f"{name}: {directory}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run a command; mistakes in what the user asked for end with a one-line message, not a traceback."""
    from zoo.cli.messages import cli_words
    from zoo.run_logging import configure_output
    from zoo.hub import DownloadError

    parser = build_parser()
    args = parser.parse_args(argv)
    configure_output(args.verbose)
    if getattr(args, "work", None):
        from zoo.threads import use_threads

        use_threads(args.work, args.threads)  # the command's summary names the count
    try:
        return int(args.handler(args) or 0)
    except (FileNotFoundError, ValueError, KeyError, DownloadError, TypeError) as error:
        parser.exit(2, f"zoo: error: {cli_words(error)}\n")
