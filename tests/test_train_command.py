"""``zoo train NAME``: the recipes ship in the package (zoo/recipes/*.yaml), ``--list`` names each
with a line, ``NAME --help`` prints what the checkout's thin script prints, and a recipe runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from zoo.recipes import RECIPES_DIR, describe, list_recipes, recipe_files

REPO = Path(__file__).resolve().parent.parent
OBJECTIVES = ("supervised", "bandit", "reinforce", "dqn", "planner", "dagger", "spo")


def run(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
           "COLUMNS": "200"}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_every_recipe_ships_in_the_package_and_every_script_names_one():
    assert RECIPES_DIR == REPO / "zoo" / "recipes"
    from zoo.factory import list_models

    assert {*(f"blocks-{o}" for o in OBJECTIVES), "light-bi-ranker", "light-cross-ranker", "light-generative",
            "light-memnet", "light-starspace"} <= set(list_recipes())
    assert set(list_recipes()) <= set(list_models())  # a recipe is named for the model it trains
    for name in list_recipes():
        common, own = recipe_files(name)
        assert common.is_file() and own.is_file() and own.parent == RECIPES_DIR
        assert describe(name) and "\n" not in describe(name)
    assert not list((REPO / "recipes").glob("*.yaml"))  # the checkout's recipes/ holds the thin scripts only
    for script in (REPO / "recipes").glob("light_*.py"):
        assert any(f'run("{name}"' in script.read_text() for name in list_recipes()), script.name


def test_no_package_module_reaches_into_the_checkout():
    """A path built from a module's location up out of the package (``parents[2] / "recipes"``)
    exists only in a clone; an installed zoo has the package alone."""
    offenders = [str(path.relative_to(REPO)) for path in (REPO / "zoo").rglob("*.py")
                 if "parents[" in path.read_text(encoding="utf-8") or '/ "recipes"' in path.read_text(encoding="utf-8")]
    assert offenders == []


def test_zoo_train_list_names_every_recipe_with_its_description():
    completed = run("-m", "zoo.cli", "train", "--list")
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert [line.split()[0] for line in lines] == list_recipes()
    assert all(describe(line.split()[0]) in line for line in lines)


@pytest.mark.parametrize("name, script", [
    ("blocks-bandit", ["recipes/blocks_policy.py", "model.name=blocks-bandit"]),
    ("blocks-supervised", ["recipes/blocks_policy.py"]),
    ("light-bi-ranker", ["recipes/light_bi.py"]),
])
def test_zoo_train_help_prints_the_scripts_keys_under_its_own_usage_line(name, script):
    from_zoo, from_script = run("-m", "zoo.cli", "train", name, "--help"), run(*script, "--help")
    assert from_zoo.returncode == from_script.returncode == 0, from_zoo.stderr + from_script.stderr
    (zoo_usage, *zoo_keys), (script_usage, *script_keys) = from_zoo.stdout.split("\n"), from_script.stdout.split("\n")
    assert zoo_usage == f"usage: zoo train {name} [key.sub=value ...] [--config FILE ...] [--verbose]"
    assert script_usage.startswith(f"usage: python {script[0]} [key.sub=value")
    assert zoo_keys == script_keys
    for path in recipe_files(name):
        assert path.read_text() in from_zoo.stdout


def test_an_unknown_recipe_is_one_line_naming_the_recipes():
    completed = run("-m", "zoo.cli", "train", "light-gpt")
    assert completed.returncode == 2
    assert completed.stderr.strip().splitlines() == [
        f"zoo: error: unknown recipe 'light-gpt'; recipes: {', '.join(list_recipes())}"]


@pytest.mark.slow
def test_zoo_train_runs_a_blocks_recipe_from_outside_the_checkout(tmp_path):
    """Run from another directory: nothing is read from the checkout's recipes/."""
    completed = run("-m", "zoo.cli", "train", "blocks-dqn", "data.source=procedural",
                    "data.procedural_sizes={train: 4, dev: 2, test: 2}", "data.episodes_per_batch=2",
                    *(f"model.options.{k}=4" for k in ("embedding_dim", "lstm_dim", "image_dim", "conv_channels",
                                                       "block_embedding_dim", "direction_embedding_dim", "hidden_dim")),
                    "loop.batch_size=4", "evaluation.gifs=0", "logger.kind=none", "trainer.max_epochs=1",
                    "trainer.enable_progress_bar=false", "threads=1", f"run_dir={tmp_path / 'run'}", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert (tmp_path / "run" / "pretrained" / "config.json").is_file()
    assert '"model_class": "BlocksDQN"' in (tmp_path / "run" / "pretrained" / "config.json").read_text()
