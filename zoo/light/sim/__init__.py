"""LIGHT-sim: LIGHT-format dialogues generated from the LIGHT world with the game engine.

**A stand-in, not LIGHT.** The real dialogues (``light_data.pkl``) cannot be downloaded
everywhere; LIGHT-sim lets the whole pipeline (loader, examples, candidates, models, metrics)
run and be measured offline. Every number measured on it must be labelled LIGHT-sim.

How an episode is made (docs/light_data.md §7a, as the 2019 collection did): a room of the world (seen
categories for train/valid/test, the six unseen categories for test_unseen), its objects and
two of its characters (:mod:`zoo.light.scene`), then up to 14 turns, players alternating.
Each turn has speech and at most one action or emote, and the engine records what the
release records: ``available_actions`` before the turn, the room's objects, the speaker's
inventory. Every action is chosen among the engine's valid actions and executed by it.

What makes the tasks depend on grounding the way LIGHT does (see :mod:`zoo.light.sim.speech`):
speech quotes the speaker's persona, the room and object descriptions, names the partner,
picks up the partner's words, answers questions and requests, reacts to the partner's
actions (a hit is met by a scream or a hit back, a gift by thanks or a smile); actions follow
the dialogue (asked for the beer, give the beer) or are announced in the same turn; emotes
come with speech that shows the mood, or mirror the partner's, with noise. Spontaneous
actions, and the actions one character asks the other for, are drawn uniformly from the
valid ones, and spontaneous emotes uniformly from the 22, so a scorer that sees only the
candidates learns little. Characters mostly address each other as "friend", "stranger"...
(a name in every line would let word overlap pick out a speaker's lines), and much of what
they say comes from text ParlAI never shows (a character's catalogue description, the room's
background): learnable from training chats in the same room or with the same character, not
by word overlap, and not transferable to unseen rooms. Speech negatives come from the same
split and are built from the same frames, so they look alike on the surface.

Seeded and deterministic: episode ``i`` of split ``s`` uses ``Random(f"{seed}:{s}:{i}")``, so
a corpus is reproducible and any episode can be regenerated alone. Sizes default to the
paper's Table 1 (8,538 / 500 / 1,000 / 739 dialogues).

On disk, a corpus whose valid/test sizes are the paper's is written in the release layout:
``light_data.pkl`` (train, valid and test placed at the positions ParlAI's split rule gives
them; docs/light_data.md §3) and ``light_unseen_data.pkl``, so ``load_release(dir, verify=False)`` and
``zoo light examples --data-dir DIR --no-verify`` read it like the real release. Other sizes
are written as ``light_sim_<split>.pkl``. Both are official-schema pickles, written atomically
with :func:`zoo.light.safe_pickle.dump_pickle`, with a ``sim_manifest.json`` beside them.

The modules, in the order data flows: :mod:`zoo.light.sim.config` (what a corpus is),
:mod:`zoo.light.sim.chat` (one episode), :mod:`zoo.light.sim.corpus` (the splits),
:mod:`zoo.light.sim.store` (on disk and in the cache). This module gathers their public names.
"""

from __future__ import annotations

from zoo.light.corpus_dir import MANIFEST, load_manifest, load_sim_corpus
from zoo.light.sim.chat import P_NAME, Plan, simulate_episode
from zoo.light.sim.config import LABEL, LABEL_V2, SIM_VERSION, SPEECH_SOURCES, SimConfig
from zoo.light.sim.corpus import (
    build_corpus,
    character_pools,
    default_line_cache,
    generate_corpus,
    generate_split,
    llm_writer,
    split_rooms,
)
from zoo.light.sim.store import (
    SimCorpus,
    ensure_sim_corpus,
    release_order,
    sim_corpus_dir,
    write_corpus,
)

__all__ = [
    "LABEL", "LABEL_V2", "MANIFEST", "P_NAME", "SIM_VERSION", "SPEECH_SOURCES", "Plan", "SimConfig",
    "SimCorpus", "build_corpus", "character_pools", "default_line_cache", "ensure_sim_corpus", "generate_corpus",
    "generate_split", "llm_writer", "load_manifest", "load_sim_corpus", "release_order",
    "sim_corpus_dir", "simulate_episode", "split_rooms", "write_corpus",
]
