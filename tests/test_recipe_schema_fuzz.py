"""Random overrides over every key the recipe schema states, valid and invalid values mixed:
each configuration is either accepted or refused in one line (``SystemExit`` with a message
naming the key), never another exception. Validation only: nothing is trained.

``ZOO_SCHEMA_FUZZ_EXAMPLES`` sets the number of configurations (default 1,000).
"""

from __future__ import annotations

import os
from collections import Counter
from functools import lru_cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

from zoo import recipe_schema
from zoo.experiment import load_config
from zoo.recipe_schema import RecipeConfigError
from zoo.recipes import list_recipes, recipe_files

RECIPE_FILES = {name.replace("-", "_"): recipe_files(name) for name in list_recipes()}
EXAMPLES = int(os.environ.get("ZOO_SCHEMA_FUZZ_EXAMPLES", "1000"))
REFUSALS = ("config key ", "unknown config key ", "cannot read the configuration")
OUTCOMES: Counter = Counter()


def _leaves(node, prefix=""):
    for key, value in node.items():
        if isinstance(value, dict) and value and key not in ("limit", "procedural_sizes"):
            yield from _leaves(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}"


def _keys(recipe: str) -> list[str]:
    """The recipe's keys, every Trainer argument, and every option of its model (its YAML holds
    only those it changes from the constructor)."""
    defaults = OmegaConf.to_container(OmegaConf.merge(*(OmegaConf.load(f) for f in RECIPE_FILES[recipe])))
    trainer_extras = [f"trainer.{key}" for key in recipe_schema.Trainer.model_fields]
    option_extras = [f"model.options.{key}" for key in recipe_schema.option_defaults(defaults["model"]["name"])]
    return sorted({*_leaves(defaults), *trainer_extras, *option_extras})


KEYS = {recipe: _keys(recipe) for recipe in RECIPE_FILES}
SCHEMAS = {recipe: recipe_schema.recipe_schema(OmegaConf.to_container(load_config(files, [])))
           for recipe, files in RECIPE_FILES.items()}


@lru_cache(maxsize=None)
def _field_schema(recipe: str, key: str) -> dict:
    """The JSON schema of ``key``'s rule (empty when the key is not a schema leaf)."""
    data = OmegaConf.to_container(load_config(RECIPE_FILES[recipe], []))
    parts = key.split(".")
    if parts[:2] == ["model", "options"]:
        parts.insert(1, data["model"]["name"])  # the discriminated union's tag
    _, _, leaf = recipe_schema._walk(tuple(parts), SCHEMAS[recipe], data)
    if leaf is None:
        return {}
    from typing import Annotated

    from pydantic import TypeAdapter

    annotation = Annotated[(leaf.annotation, *leaf.metadata)] if leaf.metadata else leaf.annotation
    return TypeAdapter(annotation).json_schema()


def _valid(schema: dict):
    """Values the rule accepts (devices and cross-field rules may still refuse some)."""
    if "anyOf" in schema:
        return st.one_of(*(_valid(option) for option in schema["anyOf"]))
    if "enum" in schema or "const" in schema:
        return st.sampled_from(schema.get("enum", [schema.get("const")]))
    kind = schema.get("type")
    if kind == "integer":
        low = schema.get("minimum", schema.get("exclusiveMinimum", -10**6))
        return st.integers(low, schema.get("maximum", low + 10**6))
    if kind == "number":
        return st.floats(schema.get("minimum", schema.get("exclusiveMinimum", -1e6)), schema.get("maximum", 1e6),
                         exclude_min="exclusiveMinimum" in schema, allow_nan=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        return st.lists(_valid(schema.get("items", {})), max_size=3)
    return st.text(alphabet="abcdefghij-_./0123456789", max_size=10)


anything = st.one_of(
    st.none(), st.booleans(), st.integers(-10**25, 10**25), st.sampled_from([-2, -1, 0, 1, 2, 2**32, 10**8]),
    st.floats(allow_nan=True, allow_infinity=True), st.text(alphabet="abcdefghij-_./0123456789 ", max_size=10),
    st.lists(st.integers(-3, 9), max_size=3), st.dictionaries(st.sampled_from(["train", "dev", "valid", "x"]),
                                                               st.integers(-2, 50), max_size=2))


def render(value) -> str:
    """``value`` as an override's right-hand side in OmegaConf's grammar."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return f"'{value}'"
    if isinstance(value, list):
        return "[" + ",".join(render(item) for item in value) + "]"
    return "{" + ", ".join(f"{key}: {render(item)}" for key, item in value.items()) + "}"


@st.composite
def recipe_and_overrides(draw):
    recipe = draw(st.sampled_from(sorted(RECIPE_FILES)))
    overrides = []
    for key in draw(st.lists(st.sampled_from(KEYS[recipe]), min_size=1, max_size=3, unique=True)):
        value = draw(st.one_of(_valid(_field_schema(recipe, key)), anything))
        overrides.append(f"{key}={render(value)}")
    return recipe, overrides


@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(recipe_and_overrides())
def test_random_overrides_are_accepted_or_refused_in_one_line(case):
    recipe, overrides = case
    try:
        load_config(RECIPE_FILES[recipe], overrides)
    except RecipeConfigError as refusal:
        OUTCOMES["refused by the schema"] += 1
        message = str(refusal)
    except SystemExit as refusal:  # validate_overrides' key and type checks, OmegaConf's grammar
        OUTCOMES["refused by the key and type checks"] += 1
        message = str(refusal.code)
    else:
        OUTCOMES["accepted"] += 1
        return
    assert message.startswith(REFUSALS) and "\n" not in message, (overrides, message)


@pytest.mark.slow
def test_the_fuzz_saw_both_outcomes():
    """Runs after the fuzz (file order): it must have accepted some configurations and refused others."""
    print(f"\nrecipe schema fuzz: {dict(OUTCOMES)}")
    assert OUTCOMES["accepted"] and OUTCOMES["refused by the schema"]
