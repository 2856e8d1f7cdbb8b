"""Fuzzing the hostile-file defences: model folders asking for code, deep pickles, deep JSON.

Every input is either accepted or refused with zoo's own one-line error, never another
exception and never a crash. ``ZOO_HOSTILE_FUZZ_EXAMPLES`` sets the inputs per property
(default 500; each property runs in well under a minute on a 2-core Xeon).
"""

from __future__ import annotations

import json
import os
import pickle
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

EXAMPLES = int(os.environ.get("ZOO_HOSTILE_FUZZ_EXAMPLES", "500"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

SETTINGS_FILES = ["config.json", "tokenizer_config.json", "tokenizer/tokenizer_config.json", "preprocessor_config.json",
                  "processor_config.json", "generation_config.json", "tokenizer/special_tokens_map.json",
                  "a/b/c/feature_extractor_config.json"]
keys = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=8)
plain = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8)),
                     lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(keys, inner, max_size=3)),
                     max_leaves=8)
requests = st.one_of(
    st.builds(lambda target: {"auto_map": {"AutoTokenizer": [None, target]}}, st.text(min_size=1, max_size=12)),
    st.just({"trust_remote_code": True}),
    st.builds(lambda target: {"custom_pipelines": {"task": {"impl": target}}}, st.text(min_size=1, max_size=12)),
    st.builds(lambda name: {"tokenizer_class": f"module.{name}"}, st.text(max_size=8)),
)


def bury(request: dict, path: list) -> object:
    """``request`` nested under the dict keys and list positions of ``path``."""
    value: object = request
    for step in reversed(path):
        value = {step: value} if isinstance(step, str) else [None] * step + [value]
    return value


@pytest.mark.slow
@FUZZ
@given(st.lists(st.tuples(st.sampled_from(SETTINGS_FILES), plain), max_size=3),
       st.sampled_from(SETTINGS_FILES), requests,
       st.lists(st.one_of(keys.filter(lambda key: key not in ("auto_map", "custom_pipelines", "trust_remote_code")),
                          st.integers(0, 2)), max_size=30))
def test_folders_asking_for_code_are_always_refused(harmless, where, request, path):
    from zoo.remote_code import RemoteCodeError, refuse_remote_code_in_folder

    with tempfile.TemporaryDirectory() as folder:
        for name, value in harmless:
            (Path(folder) / name).parent.mkdir(parents=True, exist_ok=True)
            (Path(folder) / name).write_text(json.dumps(value))
        target = Path(folder) / where
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(bury(request, path)))
        with pytest.raises(RemoteCodeError) as error:
            refuse_remote_code_in_folder(folder)
        assert "\n" not in str(error.value)


CONTAINER_STEPS = {
    "tuple1": (b"", b"\x85"),                 # (x,)
    "mark_tuple": (b"(", b"t"),               # (x,) via MARK ... TUPLE
    "list": (b"]\x94(", b"e"),                # [x] via EMPTY_LIST MEMOIZE MARK ... APPENDS
    "dict": (b"}\x94\x8c\x01k\x94", b"s"),   # {"k": x}
    "frozenset": (b"(", b"\x91"),             # frozenset({x})
}


def deep_pickle(kinds: list[str], depth: int, key_of_dict: bool) -> bytes:
    body = b"K\x01"
    rounds, rest = divmod(depth, len(kinds))
    openers = b"".join(CONTAINER_STEPS[kind][0] for kind in kinds) * rounds \
        + b"".join(CONTAINER_STEPS[kind][0] for kind in kinds[:rest])
    closers = (b"".join(CONTAINER_STEPS[kind][1] for kind in kinds) * rounds
               + b"".join(CONTAINER_STEPS[kind][1] for kind in kinds[:rest]))[::-1]  # one byte each
    inner = openers + body + closers
    if key_of_dict:  # the nested value as a dict key: CPython hashes it by recursion in C
        return b"\x80\x04}" + inner + b"K\x02s."
    return b"\x80\x04" + inner + b"."


@pytest.mark.slow
@FUZZ
@given(st.lists(st.sampled_from(sorted(CONTAINER_STEPS)), min_size=1, max_size=3),
       st.one_of(st.integers(0, 300), st.integers(0, 300), st.integers(300, 2_000_000)), st.booleans(),
       st.lists(st.tuples(st.integers(0, 10**7), st.integers(0, 255)), max_size=3))
def test_deep_pickles_load_or_are_refused_in_one_line(kinds, depth, key_of_dict, flips):
    from zoo.light.safe_pickle import MAX_PICKLE_DEPTH, CorruptPickleError, UnsafePickleError, loads_pickle

    data = deep_pickle(kinds, depth, key_of_dict)
    if flips:  # damage: any byte may change
        damaged = bytearray(data)
        for position, value in flips:
            damaged[position % len(damaged)] = value
        data = bytes(damaged)
    try:
        loads_pickle(data, source="fuzz.pkl")
    except (UnsafePickleError, CorruptPickleError) as error:
        assert "\n" not in str(error) and "fuzz.pkl" in str(error)
    else:
        assert flips or depth <= MAX_PICKLE_DEPTH


@pytest.mark.slow
@FUZZ
@given(st.integers(0, 150_000), st.lists(st.sampled_from(["[", '{"k":', '{"[":', '"[\\"{"', "1,"]), min_size=1, max_size=4),
       st.booleans())
def test_deep_json_loads_or_is_refused_in_one_line(depth, openers, balanced):
    from zoo.safe_json import MAX_JSON_DEPTH, JsonError, loads_json

    parts, closers = [], []
    for index in range(depth):
        opener = openers[index % len(openers)]
        if opener.startswith('"') or opener == "1,":  # a string or number before the next level: wrap in a list
            parts.append("[" + opener + ("," if opener.startswith('"') else ""))
            closers.append("]")
        else:
            parts.append(opener)
            closers.append("}" if opener.startswith("{") else "]")
    text = "".join(parts) + "0" + ("".join(reversed(closers)) if balanced else "")
    try:
        value = loads_json(text, source="fuzz.json")
    except JsonError as error:
        assert "\n" not in str(error) and "fuzz.json" in str(error)
    else:
        assert (balanced or depth == 0) and depth <= MAX_JSON_DEPTH
        assert json.loads(text) == value


def test_the_fuzzers_build_what_they_claim():
    from zoo.light.safe_pickle import loads_pickle

    assert loads_pickle(deep_pickle(["tuple1", "list", "dict", "frozenset", "mark_tuple"], 5, False)) == \
        ([{"k": frozenset({(1,)})}],)
    assert loads_pickle(deep_pickle(["tuple1"], 2, True)) == {((1,),): 2}
    assert pickle.loads(deep_pickle(["list"], 3, False)) == [[[1]]]
