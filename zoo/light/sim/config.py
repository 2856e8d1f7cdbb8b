"""What a LIGHT-sim corpus is made of: its sizes, behaviour, speech source and cache identity.

One frozen :class:`SimConfig` names a corpus exactly: with the world it is played in, its
:meth:`SimConfig.fingerprint` is the cache key, and bumping :data:`SIM_VERSION` rebuilds every
cached corpus after a change to generation.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, replace
from typing import Any

from zoo.light.corpus_dir import LABEL
from zoo.light.records import MAX_EPISODE_TURNS
from zoo.light.release import N_TEST, N_VALID, SPLIT_POOL
from zoo.light.world import World

SIM_VERSION = "2"
"""Bumped whenever generation changes, so cached corpora are rebuilt."""


LABEL_V2 = "LIGHT-sim v2"
SPEECH_SOURCES = ("templates", "llm")
"""``templates``: v1 speech (:mod:`zoo.light.sim.speech`); ``llm``: v2, written by a small language
model from the same chats' plans (:mod:`zoo.light.sim.llm_speech`)."""


@dataclass(frozen=True)
class SimConfig:
    """Size and behaviour of a LIGHT-sim corpus. Defaults: the paper's Table 1 sizes.

    ``p_action``/``p_emote``: chance that a turn with nothing to react to gets a spontaneous
    action / emote. ``manipulation_boost`` multiplies ``p_action`` in the chats that must hold an
    action (valid, test, and the train positions ParlAI reserves for "dialogues with object
    manipulations"): the paper's valid and test sets have more actions per utterance than train. ``p_full_length``: chance a chat runs all ``max_turns`` turns (otherwise
    between ``min_turns`` and ``max_turns - 1``). ``world``: which world source to use
    (:func:`zoo.light.environment.load_world`).
    """

    train: int = 8538
    valid: int = 500
    test: int = 1000
    test_unseen: int = 739
    seed: int = 0
    max_turns: int = 14
    min_turns: int = 8
    p_full_length: float = 0.78
    p_action: float = 0.16
    p_emote: float = 0.135
    manipulation_boost: float = 1.5
    world: str = "auto"
    speech: str = "templates"
    speech_model: str = ""
    speech_dtype: str = "float32"
    speech_memories: int = 0
    """Places and things from elsewhere in the world each speaker knows (:mod:`zoo.light.sim.llm_memories`);
    0: speech version 2 as it was."""

    def __post_init__(self) -> None:
        if self.max_turns > MAX_EPISODE_TURNS:  # the corpus's own loader would refuse its chats
            raise ValueError(f"max_turns must be at most {MAX_EPISODE_TURNS} (an episode's limit), got {self.max_turns}")
        if self.speech_memories < 0:
            raise ValueError(f"speech_memories must be at least 0, got {self.speech_memories}")
        if self.speech not in SPEECH_SOURCES:
            raise ValueError(f"unknown LIGHT-sim speech source {self.speech!r}; choose one of {SPEECH_SOURCES}")
        if (self.speech_model or self.speech_dtype != "float32" or self.speech_memories) and self.speech != "llm":
            raise ValueError("speech_model, speech_dtype and speech_memories are only used with speech='llm'")

    @property
    def label(self) -> str:
        """``LIGHT-sim`` (template speech) or ``LIGHT-sim v2`` (speech written by a language model)."""
        return LABEL_V2 if self.speech == "llm" else LABEL

    def sizes(self) -> dict[str, int]:
        return {"train": self.train, "valid": self.valid, "test": self.test, "test_unseen": self.test_unseen}

    @property
    def release_layout(self) -> bool:
        """Whether ParlAI's split rule can recover the splits from one ``light_data.pkl``."""
        return self.valid == N_VALID and self.test == N_TEST and self.train + N_VALID + N_TEST >= SPLIT_POOL.stop

    @classmethod
    def preset(cls, name: str, **changes: Any) -> "SimConfig":
        """``full`` (Table 1), ``small`` (a tenth-ish, for quick looks) or ``tiny`` (tests)."""
        presets = {
            "full": {},
            "small": {"train": 800, "valid": 100, "test": 150, "test_unseen": 120},
            "tiny": {"train": 60, "valid": 12, "test": 16, "test_unseen": 14},
        }
        if name not in presets:
            raise ValueError(f"unknown LIGHT-sim preset {name!r}; choose one of {sorted(presets)}")
        return replace(cls(**presets[name]), **changes)

    def fingerprint(self, world: World, speech_identity: str = "") -> str:
        """Identifies the corpus this config makes from ``world`` (for the cache). Template
        corpora keep the fingerprint they had before speech sources existed; an LLM corpus
        adds the speech model's identity (weights hash and decoding, ``speech_identity``)."""
        config = asdict(self)
        payload: dict[str, Any] = {"world": world.summary(), "version": SIM_VERSION}
        if config["speech_dtype"] == "float32":  # corpora from before precision was a choice keep their key
            del config["speech_dtype"]
        if not config["speech_memories"]:  # nor do corpora from before memories
            del config["speech_memories"]
        if self.speech == "templates":
            del config["speech"], config["speech_model"]
        else:
            from zoo.light.sim.llm_speech import SPEECH_VERSION

            if not speech_identity:
                raise ValueError("an LLM LIGHT-sim corpus is identified by its speech model: pass speech_identity")
            payload["speech"] = {"identity": speech_identity, "version": SPEECH_VERSION}
        payload["config"] = config
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]

