"""The recipes shipped in the package: ``zoo/recipes/*.yaml``, each named by its file
(``light_bi_ranker.yaml`` is the recipe ``light-bi-ranker``: a recipe is named for the registered
model it trains) and merged over its domain's ``*_common.yaml``.

``zoo train NAME`` and the thin scripts of a checkout (``python recipes/light_bi.py``) both
read them from here, so an installed zoo trains exactly what a clone does. This module reads
text only (no YAML parser, no torch): ``zoo train --list`` and ``zoo --help`` stay fast.
"""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

__all__ = ["RECIPES_DIR", "RENAMED", "current_name", "describe", "domain_of", "list_recipes", "recipe_defaults",
           "recipe_files"]

RECIPES_DIR = Path(str(resources.files(__package__)))
"""Where the recipe YAML files are installed."""

DOMAINS = ("light", "blocks")
COMMON = "common"
RENAMED = {"light-bi": "light-bi-ranker", "light-cross": "light-cross-ranker"}
"""Recipe names of zoo 0.3 -> the model names the recipes now have; the old names go in the next version."""


def current_name(name: str) -> str:
    """``name``, or the recipe's name now if ``name`` is an old one (saying so in one line on stderr)."""
    if name in RENAMED:
        print(f"{name} is now {RENAMED[name]}; the old name goes in the next version", file=sys.stderr)
        return RENAMED[name]
    return name


def list_recipes() -> list[str]:
    """Every recipe name, sorted: ``blocks-bandit``, ..., ``light-bi-ranker``, ..."""
    return sorted(path.stem.replace("_", "-") for path in RECIPES_DIR.glob("*.yaml")
                  if not path.stem.endswith("_" + COMMON) and path.stem.split("_", 1)[0] in DOMAINS)


def domain_of(name: str) -> str:
    """``light`` or ``blocks``: the domain of the recipe ``name`` (an old name too)."""
    name = RENAMED.get(name, name)
    _check(name)
    return name.split("-", 1)[0]


TINY_DIR = RECIPES_DIR / "tiny"
"""Overlays that make any recipe run in seconds (``zoo train NAME --tiny``): one per domain, and
one per recipe where it needs more (a warm-up of one epoch, shorter contexts)."""


def recipe_files(name: str, tiny: bool = False) -> list[Path]:
    """The YAML files of recipe ``name``, in merge order: its domain's common file, then its own;
    with ``tiny``, then the domain's tiny overlay and the recipe's own, if it has one. An old
    name (:data:`RENAMED`) reads the recipe it became, with a notice."""
    name = current_name(name)
    domain, own = domain_of(name), name.replace("-", "_")
    files = [RECIPES_DIR / f"{domain}_{COMMON}.yaml", RECIPES_DIR / f"{own}.yaml"]
    if tiny:
        files += [path for path in (TINY_DIR / f"{domain}.yaml", TINY_DIR / f"{own}.yaml") if path.is_file()]
    return files


def describe(name: str) -> str:
    """The recipe's one-line description: the first comment line of its YAML."""
    first = recipe_files(name)[1].read_text(encoding="utf-8").splitlines()[0].lstrip("# ").strip()
    for tail in (", merged over light_common.yaml.", ", merged over blocks_common.yaml."):
        first = first.removesuffix(tail)
    return first.rstrip(".")


def _check(name: str) -> None:
    known = list_recipes()
    if name not in known:
        raise KeyError(f"unknown recipe {name!r}; recipes: {', '.join(known)}")


def recipe_defaults(name: str):
    """The recipe's YAML files merged, unchecked and without overrides (an OmegaConf
    ``DictConfig``), its ``model.options`` completed with the constructor's defaults (the YAML
    holds only what the recipe changes): every setting the recipe trains with, what a benchmark
    or notebook reads them from. Unlike the rest of this module, it imports the models."""
    from omegaconf import OmegaConf

    from zoo.recipe_schema import option_defaults

    merged = OmegaConf.merge(*(OmegaConf.load(path) for path in recipe_files(name)))
    merged.model.options = OmegaConf.merge(option_defaults(merged.model.name), merged.model.get("options") or {})
    return merged
