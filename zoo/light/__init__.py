"""LIGHT (Urbanek et al. 2019): the official release, typed records, ParlAI-exact examples.

Data flows one way: release pickle -> :mod:`~zoo.light.safe_pickle` (no code runs) ->
:mod:`~zoo.light.records` (typed episodes) -> :mod:`~zoo.light.examples` (flattened
context, label, candidates). :mod:`~zoo.light.release` finds, verifies and splits the files.
"""

from __future__ import annotations

from zoo.light.candidates import EMOTES, CandidateOptions
from zoo.light.examples import LightExample, build_all_examples, build_examples, build_split_examples, full_contexts
from zoo.light.features import FEATURE_SETS, Features, get_features
from zoo.light.records import Agent, Episode, LightDataError, ObjectDescription, Setting, Turn, parse_episodes
from zoo.light.release import (
    RELEASE_FILES,
    SPLITS,
    ReleaseChecksumError,
    load_episodes,
    load_release,
    split_light_data,
)
from zoo.light.safe_pickle import CorruptPickleError, UnsafePickleError, dump_pickle, load_pickle

__all__ = [
    "EMOTES", "FEATURE_SETS", "RELEASE_FILES", "SPLITS",
    "Agent", "CandidateOptions", "CorruptPickleError", "Episode", "Features", "LightDataError", "LightExample",
    "ObjectDescription", "ReleaseChecksumError", "Setting", "Turn", "UnsafePickleError",
    "build_all_examples", "build_examples", "build_split_examples", "dump_pickle", "full_contexts",
    "get_features", "load_episodes", "load_pickle", "load_release", "parse_episodes", "split_light_data",
]
