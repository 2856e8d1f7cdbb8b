"""Regression tests for hostile inputs: each one first, then the fix's promise."""

from __future__ import annotations

import copyreg
import pickle
import time

import pytest

from zoo.light.safe_pickle import UnsafePickleError, loads_pickle


def test_unscannable_pickle_is_refused_while_extension_codes_are_registered():
    # A protocol-0 string that pickletools cannot decode but the C unpickler can, then an
    # extension code that would resolve to a registered global (here: os.getcwd).
    import io
    import os

    from zoo.light.safe_pickle import RestrictedUnpickler

    code = (0x7A11).to_bytes(2, "little")
    copyreg.add_extension("os", "getcwd", 0x7A11)
    try:
        pickle.loads(pickle.PROTO + b"\x02" + pickle.EXT2 + code + b".")  # resolved once: now cached
        payload = b"S'\\xc3\\xa9'\n0" + pickle.EXT2 + code + b")R."
        # the reproduction: the unpickler alone reads past the string and calls the cached global
        assert RestrictedUnpickler(io.BytesIO(payload), source="crafted").load() == os.getcwd()
        with pytest.raises(UnsafePickleError, match="extension code"):
            loads_pickle(payload, source="crafted")
    finally:
        copyreg.remove_extension("os", "getcwd", 0x7A11)


def test_plain_pickles_still_load_with_extension_codes_registered():
    copyreg.add_extension("os", "getcwd", 0x7A12)
    try:
        assert loads_pickle(pickle.dumps({"a": [1, 2.0, "x"]}, protocol=4), source="plain") == {"a": [1, 2.0, "x"]}
    finally:
        copyreg.remove_extension("os", "getcwd", 0x7A12)


def test_engine_parsing_of_a_huge_command_is_fast_and_refused():
    from zoo.light.engine import Engine
    from zoo.light.graph import GameGraph

    graph = GameGraph()
    hall = graph.add_room("hall", "A long hall.")
    graph.add_agent("knight", hall.id, "I am a knight.")
    graph.add_object("apple", "knight", "An apple.", frozenset({"food"}))
    engine = Engine(graph)
    started = time.perf_counter()
    result = engine.execute("knight", "give " + " to ".join(["apple"] * 64000))  # took 38.5 s before
    assert time.perf_counter() - started < 1.0
    assert not result.ok and "too long" in result.reason
    assert engine.execute("knight", "eat apple").ok  # ordinary commands are unaffected
