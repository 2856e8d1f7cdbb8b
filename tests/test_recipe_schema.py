"""Every recipe value outside its type, range or choices stops the run before any work, in one
line naming the key, what it must be and what it was (zoo/recipe_schema.py)."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated

import pytest
from omegaconf import OmegaConf

from zoo import recipe_schema
from zoo.experiment import load_config
from zoo.recipe_schema import BLOCKS_RECIPES, LIGHT_MODELS, RecipeConfigError, check_recipe_config
from zoo.recipes import RECIPES_DIR, list_recipes, recipe_files

SCRIPTS = Path(__file__).resolve().parent.parent / "recipes"
BLOCKS = recipe_files("blocks-supervised")
BANDIT = recipe_files("blocks-bandit")
DQN = recipe_files("blocks-dqn")
DAGGER = recipe_files("blocks-dagger")
LIGHT_NAMES = ("light_bi_ranker", "light_cross_ranker", "light_generative", "light_memnet", "light_starspace")


def light(name: str = "light_bi_ranker") -> list[Path]:
    return recipe_files(name.replace("_", "-"))


def refusal(recipe, *overrides: str) -> str:
    with pytest.raises(RecipeConfigError) as caught:
        load_config(recipe, list(overrides))
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize("recipe, override, message", [
    (light(), "seed=-1", "config key 'seed' must be an integer between 0 and 4294967295, got -1"),
    (BLOCKS, "seed=99999999999999999999999",
     "config key 'seed' must be an integer between 0 and 4294967295, got 99999999999999999999999"),
    (light(), "threads=-3", "config key 'threads' must be an integer between 1 and 4096 or null, got -3"),
    (light(), "data.batch_size=0", "config key 'data.batch_size' must be an integer >= 1, got 0"),
    (BLOCKS, "data.replay_capacity=0", "config key 'data.replay_capacity' must be an integer >= 1, got 0"),
    (light(), "trainer.max_epochs=-2", "config key 'trainer.max_epochs' must be an integer >= -1 or null, got -2"),
    (BLOCKS, "trainer.max_epochs=1e400", "config key 'trainer.max_epochs' must be an integer >= -1 or null, got inf"),
    (light(), "trainer.precision=bogus", "config key 'trainer.precision' must be one of 64, 32, 16, "),
    (BLOCKS, "model.options.lstm_dim=-5", "config key 'model.options.lstm_dim' must be an integer between 1 and 4096, got -5"),
    (BLOCKS, "model.options.embedding_dim=100000000",
     "config key 'model.options.embedding_dim' must be an integer between 1 and 4096, got 100000000"),
    (BLOCKS, "model.options.hidden_dim=0", "config key 'model.options.hidden_dim' must be an integer between 1 and 4096, got 0"),
])
def test_a_bad_value_is_one_line_naming_key_rule_and_value(recipe, override, message):
    assert refusal(recipe, override).startswith(message)


def test_the_precision_choices_are_lightnings():
    message = refusal(light(), "trainer.precision=bogus")
    assert "'bf16-mixed'" in message and "'16-mixed'" in message and message.endswith("got 'bogus'")
    assert load_config(light(), ["trainer.precision=bf16-mixed"]).trainer.precision == "bf16-mixed"


@pytest.mark.parametrize("recipe", [light(), BLOCKS])
def test_more_devices_than_the_machine_has_is_refused(recipe, monkeypatch):
    monkeypatch.setattr(recipe_schema, "machine_devices", lambda accelerator: ("CPU", 2))
    assert refusal(recipe, "trainer.accelerator=cpu", "trainer.devices=99") == (
        "config key 'trainer.devices' must be 'auto', an integer between 1 and 2 (the CPUs of this machine), got 99")


def test_gpu_lists_must_name_this_machines_gpus(monkeypatch):
    monkeypatch.setattr(recipe_schema, "machine_devices", lambda accelerator: ("GPU", 4))
    assert load_config(light(), ["trainer.devices=[0,3]"]).trainer.devices == [0, 3]
    assert load_config(light(), ["trainer.devices=-1"]).trainer.devices == -1
    assert "a list of distinct GPU indices 0..3, got [0, 4]" in refusal(light(), "trainer.devices=[0,4]")


@pytest.mark.parametrize("recipe", [light(), BLOCKS])
def test_zero_epochs_and_automatic_devices_are_accepted(recipe):
    assert load_config(recipe, ["trainer.max_epochs=0"]).trainer.max_epochs == 0
    assert load_config(recipe, ["trainer.devices=auto"]).trainer.devices == "auto"


@pytest.mark.parametrize("recipe, override, message", [
    (light("light_memnet"), "model.options.heads=3", "config key 'model.options.heads' must divide model.options.dim (128), got 3"),
    (light("light_generative"), "model.options.d_model=102", "must divide model.options.d_model (102), got 4"),
    (light("light_cross_ranker"), "model.options.max_candidate_tokens=256", "must be less than model.options.max_context_tokens"),
    (light("light_starspace"), "model.options.dim=100000000", "'model.options.dim' must be an integer between 1 and 4096"),
    (light("light_memnet"), "model.options.vocab_size=0", "'model.options.vocab_size' must be an integer between 1 and 262144"),
    (light(), "model.options.learning_rate=-1", "'model.options.learning_rate' must be a number > 0 and <= 10, got -1"),
    (light(), "model.options.pooling=max", "'model.options.pooling' must be one of 'cls', 'mean', got 'max'"),
    (light(), "data.limit={train: 0}", "config key 'data.limit' must be an integer >= 1, a mapping of train, valid"),
    (light(), "data.features=everything", "config key 'data.features' must be one of 'parlai_default'"),
    (light(), "trainer.logger=true", "config key 'trainer.logger' is set by zoo itself"),
    (light(), "trainer.gradient_clip_val=-1", "config key 'trainer.gradient_clip_val' must be a number >= 0 or null"),
    (BANDIT, "model.options.reward=win",
     "config key 'model.options.reward' must be one of 'problem', 'f1', 'f2', 'shaped', 'distance'"),
    (DQN, "model.options.discount=1.5", "config key 'model.options.discount' must be a number between 0 and 1, got 1.5"),
    (DQN, "loop.epsilon_end=2", "config key 'loop.epsilon_end' must be a number between 0 and 1, got 2"),
    (BANDIT, "start.warmup_epochs=-1", "config key 'start.warmup_epochs' must be an integer >= 0, got -1"),
    (DAGGER, "model.options.beta_decay=0", "config key 'model.options.beta_decay' must be a number > 0 and <= 1"),
    (BLOCKS, "data.procedural_sizes={train: 0}", "config key 'data.procedural_sizes' must be a mapping of train, dev, test"),
    (BLOCKS, "data.procedural_sizes={train: 1000000000}",
     "config key 'data.procedural_sizes' must be a mapping of train, dev, test to an integer between 1 and 100000"),
])
def test_model_data_and_method_sections_are_checked(recipe, override, message):
    assert message in refusal(recipe, override)


def test_a_model_name_outside_the_zoo_lists_the_names():
    assert refusal(light(), "model.name=light-gpt") == (
        "config key 'model.name' must be one of 'light-bi-ranker', 'light-cross-ranker', 'light-generative', "
        "'light-memnet', 'light-starspace', got 'light-gpt'")


@pytest.mark.parametrize("name", list_recipes())
def test_every_recipe_default_passes(name):
    load_config(recipe_files(name), [])


def test_a_beta_schedule_that_rises_is_refused():
    assert refusal(DAGGER, "model.options.beta_start=0.2", "model.options.beta_end=0.5") == (
        "config key 'model.options.beta_end' must be at most model.options.beta_start (0.2), got 0.5")


def test_a_section_of_another_objective_is_refused():
    """Supervised learning has no loop: a DQN setting given to it is a mistake, not a no-op."""
    with pytest.raises(SystemExit, match="unknown config key 'loop.replay_size'"):
        load_config(BLOCKS, ["loop.replay_size=10"])
    config = OmegaConf.to_container(load_config(BLOCKS, []))
    config["loop"] = {"replay_size": 10}
    with pytest.raises(RecipeConfigError, match="unknown config key 'loop'"):
        check_recipe_config(config)


def test_every_light_constructor_argument_has_a_rule():
    """A new constructor argument needs a rule here, or its bad values reach the model unchecked."""
    from zoo.factory import model_spec

    for name, options in LIGHT_MODELS.items():
        arguments = set(inspect.signature(model_spec(name).cls.__init__).parameters) - {"self"}
        fields = {field.alias or key for key, field in options.model_fields.items()}
        assert arguments == fields, name
        yaml = OmegaConf.load(RECIPES_DIR / f"{name.replace('-', '_')}.yaml")  # the recipe is named for its model
        assert set(yaml.model.options) <= fields, name


def test_the_blocks_model_options_are_each_objective_s_arguments():
    """Every option a Blocks recipe's schema checks is an argument of that objective's class, and
    every objective setting of the class (beyond the data's words and the frames' fixed size) has a rule."""
    from zoo.factory import model_spec

    for name, schema in BLOCKS_RECIPES.items():
        options = schema.model_fields["model"].annotation.model_fields["options"].annotation.__args__[0]
        arguments = model_spec(name).cls.config_keys()
        assert set(options.model_fields) <= arguments, name
        assert arguments - set(options.model_fields) == {"vocabulary", "image_size"}, name
        yaml = OmegaConf.merge(*(OmegaConf.load(path) for path in recipe_files(name)))
        assert set(yaml.model.options) <= set(options.model_fields), name


def test_the_blocks_network_options_are_the_network_config_s_settings_with_its_defaults():
    """One definition: a new network setting or default reaches every Blocks recipe's rules."""
    from dataclasses import fields

    from zoo.models.blocks import BlocksNetworkConfig

    defaults = {setting.name: setting.default for setting in fields(BlocksNetworkConfig)
                if setting.name not in recipe_schema.FIXED_NETWORK_SETTINGS}
    section = recipe_schema.BlocksNetworkOptions.model_fields
    assert set(section) - set(defaults) == {"learning_rate"}
    assert {name: section[name].default for name in defaults} == defaults


def test_the_choices_are_the_code_s_own():
    from typing import get_args

    from zoo.blocks.reward import REWARD_VARIANTS
    from zoo.light.datamodule import SOURCES
    from zoo.light.sim.config import SimConfig
    from zoo.models import generative, starspace
    from zoo.models.blocks import bandit, losses, network
    from zoo.models.backbone import POOLINGS

    def choices(section, key):
        return set(get_args(section.model_fields[key].annotation))

    assert choices(recipe_schema.BanditOptions, "reward") == set(REWARD_VARIANTS)
    assert choices(recipe_schema.DQNOptions, "reward") == set(REWARD_VARIANTS)
    assert choices(recipe_schema.BanditOptions, "update_weighting") == set(bandit.UPDATE_WEIGHTINGS)
    assert choices(recipe_schema.BanditOptions, "reward_baseline") == set(bandit.REWARD_BASELINES)
    assert choices(recipe_schema.BanditOptions, "gradient_clip_algorithm") == set(bandit.CLIP_ALGORITHMS)
    assert choices(recipe_schema.BanditOptions, "loss_form") == set(losses.LOSS_FORMS)
    assert choices(recipe_schema.BlocksNetworkOptions, "init") == set(network.INITIALISATIONS)
    assert choices(recipe_schema.StarSpaceOptions, "pooling") == set(starspace.POOLINGS)
    assert choices(recipe_schema.StarSpaceOptions, "similarity") == set(starspace.SIMILARITIES)
    assert choices(recipe_schema.BiRankerOptions, "pooling") == set(POOLINGS)
    assert choices(recipe_schema.GenerativeOptions, "start") == set(generative.START_POINTS)
    assert choices(recipe_schema.LightData, "source") == set(SOURCES)
    for preset in choices(recipe_schema.LightData, "sim_preset"):
        SimConfig.preset(preset)


def test_a_plain_dict_is_checked_too():
    config = OmegaConf.to_container(load_config(BLOCKS, []))
    config["data"]["batch_size"] = True  # a boolean is not a count
    with pytest.raises(RecipeConfigError, match=r"'data.batch_size' must be an integer >= 1, got True"):
        check_recipe_config(config)


@pytest.mark.slow
def test_the_recipe_script_prints_the_one_line_and_fails(tmp_path):
    import subprocess
    import sys

    completed = subprocess.run([sys.executable, str(SCRIPTS / "blocks_policy.py"), "model.options.hidden_dim=0",
                                f"run_dir={tmp_path / 'run'}"], capture_output=True, text=True, timeout=300)
    assert completed.returncode == 1
    assert completed.stderr.strip() == "config key 'model.options.hidden_dim' must be an integer between 1 and 4096, got 0"
    assert not (tmp_path / "run").exists()  # refused before any work


SPO = recipe_files("blocks-spo")


@pytest.mark.parametrize("recipe, override, message", [
    (SPO, "model.options.learning_rate=1e300", "config key 'model.options.learning_rate' must be a number > 0 and <= 10"),
    (SPO, "model.options.failure_penalty=1e308",
     "config key 'model.options.failure_penalty' must be a number between -1000 and 1000, got 1e+308"),
    (DAGGER, "model.options.learning_rate=1e300", "'model.options.learning_rate' must be a number > 0 and <= 10"),
    (BANDIT, "start.warmup_learning_rate=100", "'start.warmup_learning_rate' must be a number > 0 and <= 10, got 100"),
    (DQN, "model.options.failure_penalty=-1e5", "'model.options.failure_penalty' must be a number between -1000"),
    (BANDIT, "model.options.entropy_coefficient=1e300", "'model.options.entropy_coefficient' must be a number between 0"),
    (light(), "model.options.weight_decay=1e10", "'model.options.weight_decay' must be a number between 0 and 1,"),
    (light("light_starspace"), "model.options.margin=1e300", "'model.options.margin' must be a number between 0"),
    (light("light_generative"), "model.options.length_penalty=1e300", "'model.options.length_penalty' must be a number"),
])
def test_learning_rates_and_penalties_beyond_their_sane_range_are_refused(recipe, override, message):
    assert message in refusal(recipe, override)


def _schema_fields():
    """(section, field name, FieldInfo) of every section the recipes are checked against."""
    sections = {cls for cls in vars(recipe_schema).values()
                if isinstance(cls, type) and issubclass(cls, recipe_schema.Section)}
    return [(cls, name, field) for cls in sections for name, field in cls.model_fields.items()]


RATE_OR_PENALTY = r"(^|_)(learning_rate|penalty|coefficient|weight|weight_decay|margin|scale)$"


def test_every_learning_rate_and_penalty_like_option_is_bounded_both_ways():
    """Finite is not enough (1e300 overflows float32 at the first step): every option named like
    a learning rate, reward, penalty or loss weight, in every section, has a range."""
    import math
    import re

    from pydantic import TypeAdapter, ValidationError

    found = [(cls, name, field) for cls, name, field in _schema_fields() if re.search(RATE_OR_PENALTY, name)]
    assert {name for _, name, _ in found} >= {"learning_rate", "warmup_learning_rate", "failure_penalty",
                                              "entropy_coefficient", "stop_weight", "weight_decay", "margin",
                                              "score_scale", "length_penalty"}
    for cls, name, field in found:
        adapter = TypeAdapter(Annotated[(field.annotation, *field.metadata)])
        for value in (1e300, -1e300, math.inf, math.nan):
            with pytest.raises(ValidationError):
                adapter.validate_python(value, strict=True)
        if not field.is_required():
            adapter.validate_python(field.default, strict=True)


def test_num_nodes_needs_a_multi_node_launcher(monkeypatch):
    for name in ("MASTER_ADDR", "NODE_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID", "SLURM_NTASKS", "LSB_JOBID"):
        monkeypatch.delenv(name, raising=False)
    assert refusal(light(), "trainer.num_nodes=1000") == (
        "config key 'trainer.num_nodes' must be 1 for a run started on one machine, got 1000: start a multi-node run "
        "on every node at once (srun under SLURM, torchrun --nnodes 1000, or with MASTER_ADDR, MASTER_PORT, NODE_RANK "
        "and WORLD_SIZE set on each node)")
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "job-1")  # torchrun: Lightning's TorchElasticEnvironment
    assert load_config(light(), ["trainer.num_nodes=2"]).trainer.num_nodes == 2
    monkeypatch.delenv("TORCHELASTIC_RUN_ID")
    for name, value in (("MASTER_ADDR", "10.0.0.1"), ("NODE_RANK", "1"), ("WORLD_SIZE", "4")):  # started by hand
        monkeypatch.setenv(name, value)
    assert load_config(BLOCKS, ["trainer.num_nodes=2"]).trainer.num_nodes == 2


def test_an_accelerator_this_machine_lacks_is_refused_naming_those_it_has():
    from lightning.pytorch.accelerators import AcceleratorRegistry

    from zoo.machine import available_accelerators

    available = available_accelerators()
    assert {"auto", "cpu"} <= set(available)
    for name in AcceleratorRegistry.available_accelerators():
        assert (name in available) == AcceleratorRegistry[name]["accelerator"].is_available()
    if "tpu" in available:
        pytest.skip("this machine has a TPU")
    assert refusal(light(), "trainer.accelerator=tpu") == (
        f"config key 'trainer.accelerator' must be one this machine has ({', '.join(map(repr, available))}), got 'tpu'")


@pytest.mark.parametrize("recipe, override, message", [
    (DAGGER, "loop.replay_size=1000000000000",
     "config key 'loop.replay_size' must be at most 23,118 on this machine (about 43.3 kB per decision, 1 GB of "
     "memory available), got 1000000000000 (about 43.3 PB)"),
    (DAGGER, "loop.batch_size=1000000000",
     "config key 'loop.batch_size' must be at most 771 on this machine (about 1.3 MB per sampled decision, 1 GB of "
     "memory available), got 1000000000 (about 1.3 PB)"),
    (DQN, "loop.replay_size=100000", "config key 'loop.replay_size' must be at most 2,314 on this machine (about "
                                     "432 kB per transition, 1 GB of memory available), got 100000 (about 43.2 GB)"),
])
def test_replays_and_batches_larger_than_the_memory_are_refused_with_the_estimate(recipe, override, message, monkeypatch):
    from zoo import machine

    monkeypatch.setattr(machine, "available_memory", lambda: 10**9)
    assert refusal(recipe, override) == message
    load_config(recipe, [])  # the recipe's own sizes fit in 1 GB
    load_config(DQN, ["loop.replay_size=100", "loop.batch_size=1000000000"])  # a draw takes at most the 100 stored
