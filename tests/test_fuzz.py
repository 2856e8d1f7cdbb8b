"""Fuzzing every parser that reads outside input: each property's input is either
accepted or refused with one of zoo's own exceptions carrying a message, never another
traceback, never a hang, never a write outside the destination.

``ZOO_FUZZ_EXAMPLES`` sets the examples per property (CI: the default, 60).
"""

from __future__ import annotations

import json
import os
import pickle
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

EXAMPLES = int(os.environ.get("ZOO_FUZZ_EXAMPLES", "60"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow],
                database=None)

scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=True),
                    st.text(max_size=12))
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                             st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                           max_leaves=20)
coordinate = st.one_of(st.floats(-2, 2), st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 5), st.text(max_size=3))


def blocks_episode():
    block = st.lists(coordinate, min_size=2, max_size=4)
    frame = st.lists(block, min_size=0, max_size=4)
    note = st.fixed_dictionaries({"type": st.sampled_from(["A0", "A1", 3]), "start": st.one_of(st.integers(-2, 4), scalars),
                                  "finish": st.one_of(st.integers(-2, 4), scalars),
                                  "notes": st.one_of(st.lists(st.text(max_size=20), max_size=3), scalars),
                                  "users": st.one_of(st.lists(st.text(max_size=4), max_size=3), scalars)})
    return st.one_of(json_values, st.fixed_dictionaries(
        {"states": st.one_of(st.lists(frame, max_size=4), scalars), "notes": st.one_of(st.lists(note, max_size=3), scalars),
         "decoration": st.sampled_from(["digit", "logo", "other", 1]), "side_length": st.one_of(st.floats(), scalars)}))


@FUZZ
@given(st.lists(blocks_episode(), max_size=3))
def test_blocks_json_records(raw):
    from zoo.blocks.data import BlocksDataError, parse_episodes

    try:
        episodes = parse_episodes(raw, "fuzz")
    except BlocksDataError as error:
        assert str(error)
        return
    for transitions in episodes:
        for transition in transitions:
            assert abs(transition.start).max(initial=0) <= 1.25


@FUZZ
@given(json_values)
def test_checkpoint_manifests(raw):
    from pathlib import Path

    from zoo.hub import ManifestError, _parse_manifest

    try:
        _parse_manifest(raw, Path("fuzz.json"))
    except ManifestError as error:
        assert str(error)


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(["model.name", "data.source", "model.options.learning_rate",
                                            "trainer.max_epochs", "model.options.init", "data.procedural_sizes", "evaluation.dev_limit", "methd",
                                            "trainer.max_epochz", "data", "x.y.z", ""]),
                          st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)), max_size=4))
def test_recipe_overrides(pairs):
    from zoo.experiment import load_config
    from zoo.recipes import recipe_files

    recipe = recipe_files("blocks-bandit")
    try:
        load_config(recipe, [f"{key}={value}" for key, value in pairs])
    except SystemExit as refusal:
        assert isinstance(refusal.code, str) and refusal.code


@FUZZ
@given(st.text(max_size=400), st.sampled_from(["knight", "thief"]))
def test_engine_commands(command, agent):
    from zoo.light.engine import Engine
    from zoo.light.graph import GameGraph

    graph = GameGraph()
    hall = graph.add_room("hall", "A long hall.")
    graph.add_agent("knight", hall.id, "I am a knight.")
    graph.add_agent("thief", hall.id, "I steal.")
    graph.add_object("apple", "knight", "An apple.", frozenset({"food"}))
    graph.add_object("chest", hall.id, "An old chest.", frozenset({"container", "not_gettable"}))
    started = time.perf_counter()
    result = Engine(graph).execute(agent, command)
    assert time.perf_counter() - started < 1.0
    assert isinstance(result.message, str) and (result.ok or result.reason)


@FUZZ
@given(st.one_of(st.binary(max_size=200),
                 st.builds(lambda value: pickle.dumps(value, protocol=2), json_values),
                 st.builds(lambda value: pickle.dumps(value, protocol=0), json_values)))
def test_light_release_pickles(data):
    from zoo.light.safe_pickle import (
        CorruptPickleError,
        UnsafePickleError,
        loads_pickle,
    )

    try:
        loads_pickle(data, source="fuzz")
    except (UnsafePickleError, CorruptPickleError) as error:
        assert str(error)


@FUZZ
@given(config=json_values, model_class=st.sampled_from(["BlockPolicy", "IRRanker", "NoSuchModel", 3]))
def test_checkpoint_config_json(config, model_class, tmp_path_factory):
    import torch
    from safetensors.torch import save_file

    from zoo.grounded import Grounded

    directory = tmp_path_factory.mktemp("checkpoint")
    (directory / "config.json").write_text(json.dumps({"model_class": model_class, "config": config}))
    save_file({"weight": torch.zeros(2)}, str(directory / "model.safetensors"))
    before = sorted(p.name for p in directory.parent.iterdir())
    try:
        Grounded.from_pretrained(directory)
    except (ValueError, TypeError, FileNotFoundError) as error:
        assert str(error)
    assert sorted(p.name for p in directory.parent.iterdir()) == before  # nothing written beside it


@pytest.mark.parametrize("target", [".", "..", "~", "/"])
def test_outputs_never_replace_protected_places(target):
    from zoo.errors import UnsafeDestinationError
    from zoo.safe_writes import check_replaceable

    with pytest.raises(UnsafeDestinationError):
        check_replaceable(target, kind="corpus")
