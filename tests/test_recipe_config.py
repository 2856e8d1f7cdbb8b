"""Recipes refuse a mistyped or mistyped-value key before any work."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from zoo.experiment import load_config
from zoo.recipes import recipe_files

RECIPES = Path(__file__).resolve().parent.parent / "recipes"
BLOCKS = recipe_files("blocks-supervised")
BANDIT = recipe_files("blocks-bandit")
LIGHT = recipe_files("light-bi-ranker")


@pytest.mark.parametrize("override, message", [
    ("model.nme=blocks-bandit", "did you mean 'model.name'"),
    ("data.sourcee=real", "did you mean 'data.source'"),
    ("evaluation.dev_limt=1", "did you mean 'evaluation.dev_limit'"),
    ("trainer.max_epochz=1", "did you mean trainer.max_epochs"),
    ("trainer.max_epochs=abc", "must be an integer >= -1 or null, got .abc."),
    ("model.options.learning_rate=fast", "'model.options.learning_rate' expects a number, got 'fast'"),
    ("model.options.use_previous_action=3", "'model.options.use_previous_action' expects true or false, got 3"),
    ("resume.allow_changed={}", "expects list, got {}"),  # an empty mapping is a value, not a section
])
def test_blocks_recipe_names_the_bad_key_and_the_closest_one(override, message):
    with pytest.raises(SystemExit, match=message):
        load_config(BLOCKS, [override])


def test_good_overrides_and_open_values_pass():
    config = load_config(BANDIT, ["trainer.gradient_clip_val=2", "model.options.learning_rate=1",
                                  "data.procedural_sizes={train: 5}", "trainer.limit_train_batches=3"])
    assert config.model.name == "blocks-bandit" and config.data.procedural_sizes.train == 5
    light = load_config(LIGHT, ["data.limit={train: 4, valid: 2}", "model.options.learning_rate=1e-4"])
    assert light.data.limit.valid == 2


def test_light_model_options_are_checked_against_the_constructor():
    from zoo.training.light import make_model

    with pytest.raises(SystemExit, match="did you mean 'model.options.learning_rate'"):
        make_model(load_config(LIGHT, ["model.options.lerning_rate=1"]))


def test_blocks_model_options_are_checked_against_the_objective_s_constructor(tmp_path):
    from zoo.training.runner import run

    with pytest.raises(SystemExit, match="did you mean 'model.options.entropy_coefficient'"):
        run("blocks-bandit", ["model.options.entropy_coeficient=1", f"run_dir={tmp_path / 'run'}"])
    with pytest.raises(SystemExit, match="blocks-supervised takes no such option"):  # a bandit setting
        run("blocks-supervised", ["model.options.entropy_coefficient=1", f"run_dir={tmp_path / 'run'}"])
    assert not (tmp_path / "run").exists()  # refused before the run directory is made


@pytest.mark.slow
def test_recipe_help_lists_the_keys_and_exits_zero():
    completed = subprocess.run([sys.executable, str(RECIPES / "light_bi.py"), "--help"], capture_output=True, text=True,
                               timeout=120)
    assert completed.returncode == 0
    assert "max_context_tokens" in completed.stdout and "trainer" in completed.stdout


def test_blocks_procedural_sizes_are_validated():
    from zoo.blocks.datamodule import BlocksDataModule

    with pytest.raises(ValueError, match="unknown split 'train:40'"):
        BlocksDataModule(source="procedural", procedural_sizes={"train:40": None})
    with pytest.raises(ValueError, match="positive integer"):
        BlocksDataModule(source="procedural", procedural_sizes={"train": 0})


@pytest.mark.slow
def test_resuming_with_another_model_configuration_is_one_line(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("blocks_policy_recipe", RECIPES / "blocks_policy.py")
    recipe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recipe)
    tiny = ["data.source=procedural", "data.procedural_sizes={train: 6, dev: 2, test: 2}", "model.options.embedding_dim=8",
            "model.options.lstm_dim=8", "model.options.image_dim=8", "model.options.conv_channels=4",
            "model.options.block_embedding_dim=4", "model.options.direction_embedding_dim=4", "model.options.hidden_dim=8",
            "evaluation.gifs=0", "logger.kind=none",
            "trainer.max_epochs=1", "trainer.enable_progress_bar=false", f"run_dir={tmp_path}"]
    recipe.main(tiny)
    with pytest.raises(SystemExit, match=r"another configuration \(model.options.hidden_dim: 8 -> 16; "
                                         r"trainer.max_epochs: 1 -> 2\)"):
        recipe.main([*tiny, "model.options.hidden_dim=16", "trainer.max_epochs=2"])


@pytest.mark.parametrize("name", ["light-bi-ranker", "light-memnet", "blocks-bandit", "blocks-spo"])
def test_a_runs_configuration_records_every_model_option_the_constructor_defines(name, capsys):
    from zoo.experiment import load_config, print_help
    from zoo.recipe_schema import option_defaults
    from zoo.recipes import recipe_files

    config = load_config(recipe_files(name), [])
    defaults = option_defaults(str(config.model.name))
    assert set(config.model.options) == set(defaults)  # config.yaml holds them all: a run pins its values
    print_help(recipe_files(name), f"zoo train {name}")
    shown = capsys.readouterr().out
    assert f"model.options: {config.model.name}'s settings and their defaults" in shown
    assert all(f"    {key}:" in shown for key in defaults)


def test_a_list_given_where_the_options_mapping_goes_is_refused_in_one_line():
    from zoo.experiment import load_config
    from zoo.recipes import recipe_files

    with pytest.raises(SystemExit) as refused:  # found by the overrides fuzz: omegaconf's message has three lines
        load_config(recipe_files("light-bi-ranker"), ["model.options.allow_download=false", "model.options=[]"])
    assert str(refused.value).startswith("cannot read the configuration: Cannot merge") and "\n" not in str(refused.value)
