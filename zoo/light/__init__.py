"""LIGHT (Urbanek et al. 2019): the official release, typed records, ParlAI-exact examples,
the game engine, LIGHT-sim and the data module.

Data flows one way: release pickle -> :mod:`~zoo.light.safe_pickle` (no code runs) ->
:mod:`~zoo.light.records` (typed episodes) -> :mod:`~zoo.light.examples` (flattened
context, label, candidates). :mod:`~zoo.light.release` finds, verifies and splits the files.

The world: :mod:`~zoo.light.environment` loads a :class:`~zoo.light.world.World` (release,
JSON, or the authored world shipped here); :class:`~zoo.light.engine.Engine` runs the 12 verbs
and 22 emotes over a :mod:`~zoo.light.graph`; :mod:`~zoo.light.sim` plays chats in it to write
LIGHT-sim corpora in the release schema. ``LightDataModule`` and the metrics import torch and
are loaded on first use.
"""

from __future__ import annotations

from zoo.light.candidates import EMOTES, CandidateOptions
from zoo.light.corpus_dir import load_sim_corpus
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
from zoo.light.engine import ActionResult, Engine
from zoo.light.environment import authored_world, load_world
from zoo.light.replay import replay_episode
from zoo.light.stats import corpus_stats
from zoo.light.world import World

_LAZY = {"LightDataModule": "zoo.light.datamodule", "RecallAtK": "zoo.light.metrics",
         "RankingAccuracy": "zoo.light.metrics"}


def __getattr__(name: str):
    """Torch-backed names load on first use, so ``import zoo.light`` stays light."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'zoo.light' has no attribute {name!r}")

__all__ = [
    "EMOTES", "FEATURE_SETS", "RELEASE_FILES", "SPLITS",
    "Agent", "CandidateOptions", "CorruptPickleError", "Episode", "Features", "LightDataError", "LightExample",
    "ObjectDescription", "ReleaseChecksumError", "Setting", "Turn", "UnsafePickleError",
    "build_all_examples", "build_examples", "build_split_examples", "dump_pickle", "full_contexts",
    "get_features", "load_episodes", "load_pickle", "load_release", "parse_episodes", "split_light_data",
    "ActionResult", "Engine", "LightDataModule", "RankingAccuracy", "RecallAtK", "World",
    "authored_world", "corpus_stats", "load_sim_corpus", "load_world", "replay_episode",
]
