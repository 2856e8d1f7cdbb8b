"""``zoo train NAME --tiny``: every recipe's whole pipeline (data, training, checkpoints,
evaluation, export) in seconds, with no data set needed beyond what zoo generates."""

from __future__ import annotations

import time

import pytest

from zoo.cli import main
from zoo.recipes import DOMAINS, TINY_DIR, list_recipes, recipe_files


def test_every_tiny_overlay_belongs_to_a_domain_or_a_recipe():
    names = {*DOMAINS, *(name.replace("-", "_") for name in list_recipes())}
    assert {path.stem for path in TINY_DIR.glob("*.yaml")} <= names
    assert all((TINY_DIR / f"{domain}.yaml").is_file() for domain in DOMAINS)


def test_tiny_adds_the_domains_overlay_then_the_recipes_own():
    assert recipe_files("blocks-bandit", tiny=True)[2:] == [TINY_DIR / "blocks.yaml", TINY_DIR / "blocks_bandit.yaml"]
    assert recipe_files("blocks-supervised", tiny=True)[2:] == [TINY_DIR / "blocks.yaml"]
    assert recipe_files("light-bi-ranker")[-1].name == "light_bi_ranker.yaml"


@pytest.mark.slow
@pytest.mark.parametrize("recipe", list_recipes())
def test_a_tiny_run_of_every_recipe_takes_seconds_and_exports_a_model(recipe, tmp_path):
    started = time.perf_counter()
    assert main(["train", recipe, "--tiny", f"run_dir={tmp_path / 'run'}"]) == 0
    assert (tmp_path / "run" / "pretrained" / "config.json").is_file()
    assert time.perf_counter() - started < 60  # measured 4-18 s on a 2-core Xeon; a loaded machine is slower
