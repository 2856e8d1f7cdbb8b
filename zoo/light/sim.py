"""LIGHT-sim: LIGHT-format dialogues generated from the LIGHT world with the game engine.

**A stand-in, not LIGHT.** The real dialogues (``light_data.pkl``) cannot be downloaded
everywhere; LIGHT-sim lets the whole pipeline (loader, examples, candidates, models, metrics)
run and be measured offline. Every number measured on it must be labelled LIGHT-sim.

How an episode is made (spec §7a, as the 2019 collection did): a room of the world (seen
categories for train/valid/test, the six unseen categories for test_unseen), its objects and
two of its characters (:mod:`zoo.light.scene`), then up to 14 turns, players alternating.
Each turn has speech and at most one action or emote, and the engine records what the
release records: ``available_actions`` before the turn, the room's objects, the speaker's
inventory. Every action is chosen among the engine's valid actions and executed by it.

What makes the tasks depend on grounding the way LIGHT does (see :mod:`zoo.light.sim_speech`):
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
them; spec §3) and ``light_unseen_data.pkl``, so ``load_release(dir, verify=False)`` and
``zoo light examples --data-dir DIR --no-verify`` read it like the real release. Other sizes
are written as ``light_sim_<split>.pkl``. Both are official-schema pickles, written atomically
with :func:`zoo.light.safe_pickle.dump_pickle`, with a ``sim_manifest.json`` beside them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from zoo.light import actions
from zoo.light import sim_speech as say
from zoo.light.candidates import EMOTES
from zoo.light.environment import load_world
from zoo.light.records import Agent, Episode, LightDataError, ObjectDescription, Setting, Turn
from zoo.light.release import N_TEST, N_VALID, SPLIT_POOL, SPLITS, load_episodes, split_positions
from zoo.light.safe_pickle import dump_pickle
from zoo.light.scene import Scene, stage_chat
from zoo.light.world import World
from zoo.paths import cache_dir

log = logging.getLogger(__name__)

SIM_VERSION = "2"
"""Bumped whenever generation changes, so cached corpora are rebuilt."""

MANIFEST = "sim_manifest.json"
P_NAME = 0.2
"""Chance that a character addresses the other by name rather than "friend", "stranger"..."""
LABEL = "LIGHT-sim"
LABEL_V2 = "LIGHT-sim v2"
SPEECH_SOURCES = ("templates", "llm")
"""``templates``: v1 speech (:mod:`zoo.light.sim_speech`); ``llm``: v2, written by a small language
model from the same chats' plans (:mod:`zoo.light.sim_llm_speech`)."""


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

    def __post_init__(self) -> None:
        if self.speech not in SPEECH_SOURCES:
            raise ValueError(f"unknown LIGHT-sim speech source {self.speech!r}; choose one of {SPEECH_SOURCES}")
        if self.speech_model and self.speech != "llm":
            raise ValueError("speech_model is only used with speech='llm'")

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
        if self.speech == "templates":
            del config["speech"], config["speech_model"]
        else:
            from zoo.light.sim_llm_speech import SPEECH_VERSION

            if not speech_identity:
                raise ValueError("an LLM LIGHT-sim corpus is identified by its speech model: pass speech_identity")
            payload["speech"] = {"identity": speech_identity, "version": SPEECH_VERSION}
        payload["config"] = config
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


# ------------------------------------------------------------------------------- one chat
@dataclass
class _TurnNote:
    """What a turn did, for the partner to react to."""

    speaker: int
    speech: str
    command: actions.Command | None = None
    verb: str | None = None
    obj: str | None = None
    other: str | None = None
    emote: str | None = None
    greeted: bool = False
    request: tuple[str, str] | None = None
    question: str | None = None
    acts: list[tuple[str, str]] = field(default_factory=list)
    """What the turn's speech does, as ``(kind, material)`` pairs (``("object", "the lamp")``,
    ``("request", "give beer to smith")``): the plan an LLM speech writer follows
    (:mod:`zoo.light.sim_llm_speech`). Recording it draws nothing from the RNG."""


@dataclass
class _Chat:
    """A chat being played: the scene plus what each player has left to talk about."""

    scene: Scene
    rng: random.Random
    config: SimConfig
    require_action: bool
    persona_left: list[list[str]] = field(default_factory=list)
    room_left: list[str] = field(default_factory=list)
    background: list[str] = field(default_factory=list)
    last: _TurnNote | None = None
    had_action: bool = False

    def __post_init__(self) -> None:
        self.names = [p.name for p in self.scene.players]
        self.calls = [say.address(name) for name in self.names]
        words = " ".join(self.scene.descriptions) + " " + self.scene.room.name
        self.grounded = frozenset(w.lower() for w in say.WORD.findall(words) if len(w) >= 4)
        self.persona_left = [say.sentences(p.persona) for p in self.scene.players]
        self.room_left = say.sentences(self.scene.room.description)
        self.background = say.sentences(self.scene.room.background)
        self.image_used = [False, False]

    # -------------------------------------------------------------- text material
    def persona_sentence(self, me: int) -> str | None:
        left = self.persona_left[me]
        return left.pop(self.rng.randrange(len(left))) if left else None

    def vocative(self, name: str) -> str:
        """How the speaker addresses ``name``: by name now and then, mostly generically."""
        if self.rng.random() < P_NAME:
            return say.address(name)
        return self.rng.choice(say.GENERIC_ADDRESS)

    def self_image(self, me: int) -> str | None:
        """The character's catalogue description (third person, never shown to a model by
        ParlAI): grounded in who the character is, learnable from training chats with the
        same character, invisible to word overlap with the context."""
        if self.image_used[me]:
            return None
        self.image_used[me] = True
        text = " ".join(self.scene.players[me].spec.description.split()).rstrip(".")
        return text or None

    def room_sentence(self) -> str | None:
        return self.room_left.pop(self.rng.randrange(len(self.room_left))) if self.room_left else None

    def object_sentence(self, name: str) -> str:
        parts = say.sentences(self.scene.descriptions.get(name, "")) or [self.scene.descriptions.get(name, "")]
        return self.rng.choice(parts)

    def visible_objects(self) -> list[str]:
        graph = self.scene.graph
        return [n.name for n in graph.nodes.values() if n.is_object]

    # -------------------------------------------------------------- speech acts
    @staticmethod
    def did(note: _TurnNote, kind: str, material: str, text: str | None) -> str | None:
        """``text``, with ``(kind, material)`` added to the turn's plan when there is text."""
        if text:
            note.acts.append((kind, material))
        return text

    def plain(self, me: int, note: _TurnNote) -> str:
        """Speech with nothing to react to: persona, setting, an object, an echo of the partner,
        a question, a request, the (unseen) background, or small talk."""
        rng, partner = self.rng, self.vocative(self.names[1 - me])
        kinds = ["persona"] * 8 + ["persona_span"] * 10 + ["self_image"] * 10 + ["setting"] * 4 + \
            ["setting_span"] * 6 + ["background"] * 12 + ["object"] * 10 + ["echo"] * 8 + ["question"] * 8 + \
            ["request"] * 8 + ["small"] * 16
        for _ in range(6):
            kind = rng.choice(kinds)
            text = self._plain(kind, me, partner, note)
            if text:
                return text
        return self.did(note, "small_talk", "", say.fill(rng, say.SMALL_TALK, p=partner))

    def _plain(self, kind: str, me: int, partner: str, note: _TurnNote) -> str | None:
        rng = self.rng
        if kind == "persona":
            s = self.persona_sentence(me)
            return s and self.did(note, "persona", s, say.fill(rng, say.PERSONA, s=s, sl=say.lower_first(s), p=partner))
        if kind == "persona_span":
            s = self.persona_sentence(me)
            return s and self.did(note, "persona", s, say.fill(rng, say.PERSONA_SPANS, x=say.span(s, rng), p=partner))
        if kind == "self_image":
            x = self.self_image(me)
            return x and self.did(note, "self_image", x,
                                  say.fill(rng, say.SELF_IMAGE, x=say.lower_first(x), X=x, p=partner))
        if kind == "setting_span":
            d = self.room_sentence()
            r = say.place_name(self.scene.room.name)
            x = d and say.lower_first(say.span(d, rng))
            return d and self.did(note, "setting", d, say.fill(rng, say.SETTING_SPANS, x=x, r=r, p=partner))
        if kind == "setting":
            d = self.room_sentence()
            r = say.place_name(self.scene.room.name)
            return d and self.did(note, "setting", d,
                                  say.fill(rng, say.SETTING, d=d, dl=say.lower_first(d), r=r, p=partner))
        if kind == "object":
            names = self.visible_objects()
            if not names:
                return None
            o = rng.choice(names)
            return self.did(note, "object", o, say.fill(rng, say.OBJECT, o=o, d=self.object_sentence(o), p=partner))
        if kind == "echo":
            word = self.last and say.content_word(self.last.speech, rng, self.grounded)
            if not word:
                return None
            s = self.persona_sentence(me) or self.room_sentence() or ""
            return self.did(note, "echo", word, say.fill(rng, say.ECHO, w=word, p=partner, s=s).strip())
        if kind == "question":
            question = rng.choice(sorted(say.QUESTIONS))
            if question == "carry" and not self._held_by(1 - me):
                return None
            note.question = question
            return self.did(note, f"ask_{question}", "", say.fill(rng, say.QUESTIONS[question], p=partner,
                                                                  r=say.place_name(self.scene.room.name)))
        if kind == "request":
            return self._request(me, partner, note)
        if kind == "background":
            b = self.background.pop(rng.randrange(len(self.background))) if self.background else None
            if b and rng.random() < 0.5:
                return self.did(note, "background", b, say.fill(rng, say.BACKGROUND_SPANS,
                                                                x=say.lower_first(say.span(b, rng, 6, 11)), p=partner))
            return b and self.did(note, "background", b, say.fill(rng, say.BACKGROUND, b=b, bl=say.lower_first(b)))
        return self.did(note, "small_talk", "", say.fill(rng, say.SMALL_TALK, p=partner))

    def _held_by(self, who: int) -> list[str]:
        graph = self.scene.graph
        return [graph.nodes[i].name for i in graph.resolve(self.names[who]).contents]

    def _request(self, me: int, partner: str, note: _TurnNote) -> str | None:
        """Ask the partner to do one of the things it could do now, drawn uniformly: requests
        ground the next action in the dialogue without favouring any kind of action."""
        rng, graph = self.rng, self.scene.graph
        options = self.valid_commands(1 - me)
        if not options:
            return None
        text = rng.choice(sorted(options))
        command = options[text]
        target = graph.nodes[command.target].name
        other = graph.nodes[command.other].name if command.other else ""
        me_name = self.names[me]
        verb = command.verb
        if verb == "steal" and other == me_name:
            return None
        if verb == "get" and other:
            key = "get_from"
        elif verb == "give":
            key = "give_me" if other == me_name else "give"
        elif verb in ("hit", "hug"):
            key, other = (f"{verb}_me", "") if target == me_name else (verb, target)
        else:
            key = verb
        note.request = ("act", text)
        description = self.object_sentence(target) if target in self.scene.descriptions else ""
        line = say.fill(rng, say.REQUESTS[key], o=target, c=say.address(other), p=partner, d=description).strip()
        return self.did(note, "request", text, line)

    def answer(self, me: int, question: str, partner: str, note: _TurnNote) -> str | None:
        rng = self.rng
        if question == "carry":
            mine = self._held_by(me)
            if not mine:
                return None
            o = rng.choice(mine)
            return self.did(note, "answer_carry", o,
                            say.fill(rng, say.ANSWERS["carry"], o=o, d=self.object_sentence(o), p=partner))
        s = self.persona_sentence(me)
        return s and self.did(note, f"answer_{question}", s, say.fill(
            rng, say.ANSWERS[question], s=s, sl=say.lower_first(s), n=self.calls[me], p=partner))

    def announce(self, command: actions.Command, text: str, partner: str) -> str:
        graph = self.scene.graph
        verb = command.verb
        target = graph.nodes[command.target].name
        other = graph.nodes[command.other].name if command.other else None
        slots = {"p": partner, "o": target, "c": other or ""}
        if verb in ("hit", "hug"):
            slots["p"] = self.vocative(target)
        elif verb in ("give", "steal") and other:
            slots["p"] = self.vocative(other)
        key = "get_from" if verb == "get" and " from " in text and other else verb
        return say.fill(self.rng, say.ANNOUNCE[key], **slots)

    # -------------------------------------------------------------- one turn
    def valid_commands(self, me: int) -> dict[str, actions.Command]:
        graph = self.scene.graph
        actor = graph.resolve(self.names[me])
        valid: dict[str, actions.Command] = {}
        for command in actions.candidate_commands(graph, actor):
            if actions.check(graph, actor, command) is None:
                valid.setdefault(actions.canonical(graph, command), command)
        return valid

    def safe(self, me: int, valid: dict[str, actions.Command]) -> list[str]:
        """Valid actions that cannot kill anyone (a chat never loses a player)."""
        graph = self.scene.graph
        actor = graph.resolve(self.names[me])
        return [text for text, c in valid.items()
                if c.verb != "hit" or graph.nodes[c.target].health > actions.max_damage(actor)]

    def decide(self, t: int, me: int, valid: dict[str, actions.Command], last_turn: bool
               ) -> tuple[list[str], str | None, str | None, _TurnNote]:
        """Speech parts, action text and emote of turn ``t`` by player ``me``."""
        rng, partner, last = self.rng, self.vocative(self.names[1 - me]), self.last
        partner_name = self.names[1 - me]
        note = _TurnNote(me, "")
        parts: list[str] = []
        action: str | None = None
        emote: str | None = None
        safe = self.safe(me, valid)
        if t == 0:
            note.greeted = True
            parts.append(self.did(note, "greet", "", say.fill(rng, say.GREETINGS, p=partner)))
            s = self.persona_sentence(me) if rng.random() < 0.5 else None
            if s:
                parts.append(self.did(note, "introduce", s, say.fill(rng, say.INTRODUCTIONS, s=s)))
        elif t == 1 and last is not None and last.greeted:
            parts.append(self.did(note, "greet_back", "", say.fill(rng, say.GREETING_REPLIES, p=partner)))
            s = self.persona_sentence(me) if rng.random() < 0.6 else None
            if s:
                parts.append(self.did(note, "introduce", s, say.fill(rng, say.INTRODUCTIONS, s=s)))

        reacted = False
        if last is not None and last.command is not None:
            verb, obj = last.verb, last.obj or ""
            me_name = self.names[me]
            about_me = (verb in ("hit", "hug") and last.obj == me_name) or \
                       (verb in ("give", "steal") and last.other == me_name)
            if about_me:
                reacted = True
                if verb == "hit":
                    back = next((x for x in safe if x == f"hit {partner_name}"), None)
                    roll = rng.random()
                    if back and roll < 0.3:
                        action = back
                        parts.append(self.did(note, "hit_back", "", say.fill(rng, say.ANNOUNCE["hit"], p=partner)))
                    else:
                        if roll < 0.85:
                            emote = rng.choice(say.REACTION_EMOTES["hit"])
                        parts.append(self.did(note, "react_hit", "", say.fill(rng, say.REACT["hit"], p=partner)))
                elif verb == "steal":
                    back = f"steal {obj} from {partner_name}"
                    roll = rng.random()
                    if back in valid and roll < 0.3:
                        action = back
                    elif roll < 0.7:
                        emote = rng.choice(say.REACTION_EMOTES["steal"])
                    parts.append(self.did(note, "react_steal", obj,
                                          say.fill(rng, say.REACT["steal"], o=obj, p=partner)))
                else:
                    if rng.random() < 0.5:
                        emote = rng.choice(say.REACTION_EMOTES[verb])
                    parts.append(self.did(note, f"react_{verb}", obj, say.fill(rng, say.REACT[verb], o=obj, p=partner)))
            elif rng.random() < 0.4 and verb in say.REACT and verb not in ("hit", "hug", "give", "steal"):
                reacted = True
                parts.append(self.did(note, "react_action", obj,
                                      say.fill(rng, say.REACT[verb], o=obj, c=last.other or "", p=partner)))
        if not reacted and last is not None and last.emote is not None and rng.random() < 0.5:
            reacted = True
            if last.emote in say.MIRRORED_EMOTES and rng.random() < 0.5:
                emote = last.emote
                parts.append(self.did(note, "mirror_emote", emote, say.fill(rng, say.EMOTE_CUES[emote], p=partner)))
            else:
                parts.append(self.did(note, "react_emote", last.emote,
                                      say.fill(rng, say.EMOTE_REACT, e=last.emote, p=partner)))

        if last is not None and last.request is not None and action is None:
            wanted = last.request[1]
            if wanted in safe and emote is None and rng.random() < 0.75:
                action = wanted
                parts.append(self.did(note, "comply", wanted, self.announce(valid[wanted], wanted, partner)))
            else:
                parts.append(self.did(note, "refuse", wanted, say.fill(rng, say.REFUSALS, p=partner)))
        elif last is not None and last.question is not None and rng.random() < 0.85:
            answer = self.answer(me, last.question, partner, note)
            if answer:
                parts.append(answer)

        if action is None and emote is None and not reacted:
            roll = rng.random()
            p_action = self.config.p_action * (self.config.manipulation_boost if self.require_action else 1.0)
            if safe and roll < p_action:
                action = rng.choice(sorted(safe))
                if rng.random() < 0.75:
                    parts.append(self.did(note, "announce", action, self.announce(valid[action], action, partner)))
            elif roll < p_action + self.config.p_emote:
                emote = rng.choice(EMOTES)
                if rng.random() < 0.7:
                    parts.append(self.did(note, "emote_cue", emote, say.fill(rng, say.EMOTE_CUES[emote], p=partner)))
        if action is None and self.require_action and not self.had_action and last_turn and safe:
            action, emote = rng.choice(sorted(safe)), None
            parts.append(self.did(note, "announce", action, self.announce(valid[action], action, partner)))
        if not parts or (rng.random() < 0.3 and sum(len(p.split()) for p in parts) < 10):
            parts.append(self.plain(me, note))
        return parts, action, emote, note


Plan = list[tuple[tuple[str, str], ...]]
"""Per turn of an episode, what its speech does (:attr:`_TurnNote.acts`)."""


def simulate_episode(world: World, room_id: int, pool: Sequence[int], rng: random.Random,
                     config: SimConfig = SimConfig(), require_action: bool = False,
                     plan: Plan | None = None) -> Episode:
    """Play one chat in ``room_id`` (top-up characters from ``pool``) and record it as a release
    episode; when ``plan`` is given, each turn's speech acts are appended to it."""
    scene = stage_chat(world, room_id, rng, pool, engine_seed=rng.randrange(2**31))
    chat = _Chat(scene, rng, config, require_action)
    n_turns = config.max_turns if rng.random() < config.p_full_length else rng.randint(config.min_turns,
                                                                                     config.max_turns - 1)
    engine, graph = scene.engine, scene.graph
    names = chat.names
    turns: list[Turn] = []
    descriptions: dict[str, str] = {}
    for t in range(n_turns):
        me = t % 2
        valid = chat.valid_commands(me)
        actor = graph.resolve(names[me])
        room = graph.room_of(actor)
        carrying, wearing, wielding = graph.inventory(actor)
        room_objects = graph.room_objects(room)
        for name in room_objects + carrying + wearing + wielding:
            descriptions.setdefault(name, scene.descriptions.get(name[2:] if name.startswith("a ") else name[3:], ""))
        parts, action, emote, note = chat.decide(t, me, valid, t == n_turns - 1)
        if action is not None:
            result = engine.execute(names[me], action)
            if not result.ok or result.command != action:  # the engine is the referee, never skipped
                raise LightDataError(f"LIGHT-sim chose an invalid action {action!r}: {result.reason}")
            command = valid[action]
            note.command, note.verb = command, command.verb
            note.obj = graph.nodes[command.target].name if command.target in graph.nodes else _name_of(action)
            note.other = graph.nodes[command.other].name if command.other in graph.nodes else None
            chat.had_action = True
        if emote is not None:
            engine.emote(names[me], emote)
        speech = " ".join(part for part in parts if part)
        note.speech, note.emote = speech, emote
        chat.last = note
        if plan is not None:
            plan.append(tuple(note.acts))
        turns.append(Turn(
            speech=speech, action=action, emote=emote, available_actions=tuple(sorted(valid)),
            room_objects=tuple(room_objects), carrying=tuple(carrying), wearing=tuple(wearing),
            wielding=tuple(wielding), character=names[me],
            room_agents=tuple(n.name for n in graph.agents_in(room)),
        ))
    room = scene.room
    return Episode(
        setting=Setting(room.name, room.category, room.description, room.background),
        agents=(Agent(names[0], scene.players[0].persona), Agent(names[1], scene.players[1].persona)),
        turns=tuple(turns),
        objects=tuple(ObjectDescription(name, text) for name, text in descriptions.items()),
    )


def _name_of(action: str) -> str:
    """Object name of an ``eat``/``drink`` command after the object is gone."""
    return action.split(" ", 1)[1]


# ------------------------------------------------------------------------------- corpora
def split_rooms(world: World) -> tuple[list[int], list[int]]:
    """(seen, unseen) room ids: the unseen ones are the six categories of the paper's unseen test."""
    return world.room_ids(unseen=False), world.room_ids(unseen=True)


def character_pools(world: World) -> tuple[list[int], list[int]]:
    """Characters (with a persona) for top-ups: those of seen rooms, and those only of unseen
    rooms. A world without links (the flat export) shares every character between the two."""
    seen_rooms, unseen_rooms = split_rooms(world)
    playable = {i for i, c in world.characters.items() if c.persona}
    seen = [i for i in world.characters_of(seen_rooms) if i in playable]
    unseen = [i for i in world.characters_of(unseen_rooms) if i in playable]
    unseen_only = sorted(set(unseen) - set(seen))
    everyone = sorted(playable)
    return (seen or everyone), (unseen_only or unseen or everyone)


def generate_split(world: World, split: str, n: int, config: SimConfig,
                   require_action: Callable[[int], bool] = lambda i: False,
                   plans: list[Plan] | None = None) -> list[Episode]:
    """``n`` episodes of ``split`` (``test_unseen`` draws from the unseen rooms); each episode's
    speech plan is appended to ``plans`` when given."""
    seen_rooms, unseen_rooms = split_rooms(world)
    rooms = unseen_rooms if split == "test_unseen" else seen_rooms
    if not rooms:
        raise LightDataError(f"the {world.source} world has no {'unseen' if split == 'test_unseen' else 'seen'} rooms")
    seen_pool, unseen_pool = character_pools(world)
    pool = unseen_pool if split == "test_unseen" else seen_pool
    episodes = []
    for index in range(n):
        rng = random.Random(f"{config.seed}:{split}:{index}")
        plan: Plan | None = [] if plans is not None else None
        episodes.append(simulate_episode(world, rng.choice(rooms), pool, rng, config, require_action(index), plan))
        if plans is not None:
            plans.append(plan)  # type: ignore[arg-type]
    return episodes


def generate_corpus(config: SimConfig = SimConfig(), world: World | None = None,
                    data_dir: str | os.PathLike | None = None,
                    plans: dict[str, list[Plan]] | None = None) -> dict[str, list[Episode]]:
    """All four splits, with template speech. Valid and test chats (and, in the release layout,
    the train chats at the positions ParlAI reserves for "dialogues with object manipulations")
    contain at least one action, as in LIGHT. ``plans``, when given, receives each split's
    speech plans (what an LLM writer rewrites the speech from)."""
    world = world or load_world(data_dir, config.world)
    train_in_pool: set[int] = set()
    if config.release_layout:
        reserved = set().union(*split_positions())
        train_positions = [p for p in range(config.train + N_VALID + N_TEST) if p not in reserved]
        train_in_pool = {i for i, p in enumerate(train_positions) if p in SPLIT_POOL}
    rules: dict[str, Callable[[int], bool]] = {"train": train_in_pool.__contains__, "valid": lambda i: True,
                                               "test": lambda i: True, "test_unseen": lambda i: False}
    splits = {}
    for split, size in config.sizes().items():
        split_plans = plans.setdefault(split, []) if plans is not None else None
        splits[split] = generate_split(world, split, size, config, rules[split], split_plans)
    return splits


def build_corpus(config: SimConfig, world: World, line_cache: str | os.PathLike | None = None,
                 writer: Any = None) -> tuple[dict[str, list[Episode]], dict]:
    """The corpus of ``config`` and what its manifest adds: template speech, or (``speech="llm"``)
    the same chats with speech written by ``writer`` (default: a
    :class:`~zoo.light.llm_writer.ChatLineWriter` of ``config.speech_model``), through the
    resumable line cache ``line_cache`` (default: beside the cached corpora)."""
    start = time.perf_counter()
    if config.speech == "templates":
        splits = generate_corpus(config, world)
        return splits, {"generate_seconds": round(time.perf_counter() - start, 2)}
    from zoo.light.line_cache import LineCache
    from zoo.light.sim_llm_speech import SPEECH_VERSION, write_corpus_speech

    writer = writer or llm_writer(config)
    plans: dict[str, list[Plan]] = {}
    splits = generate_corpus(config, world, plans=plans)
    cache = LineCache(line_cache or default_line_cache(writer.identity))
    splits, report = write_corpus_speech(splits, plans, writer, cache, config.seed)
    speech = {"source": "llm", "version": SPEECH_VERSION, "model": str(getattr(writer, "path", "")),
              "identity": writer.identity, "line_cache": str(cache.path), **report.as_dict()}
    if hasattr(writer, "cost"):
        speech["cost"] = {k: round(v, 2) if isinstance(v, float) else v for k, v in writer.cost.items()}
    return splits, {"generate_seconds": round(time.perf_counter() - start, 2), "speech": speech}


def llm_writer(config: SimConfig, batch_size: int = 16):
    """The speech model of an LLM corpus (loaded lazily, on the first line not in the cache)."""
    from zoo.light.llm_writer import ChatLineWriter

    return ChatLineWriter(config.speech_model or None, batch_size=batch_size)


def default_line_cache(identity: str, root: str | os.PathLike | None = None) -> Path:
    """``$ZOO_CACHE/light/sim/llm_lines/<model>.jsonl``: one file per speech model and decoding,
    shared by every corpus (keys hold the prompt and seed, so corpora never mix lines)."""
    base = Path(root) if root is not None else cache_dir() / "light" / "sim"
    return base / "llm_lines" / f"{hashlib.sha256(identity.encode()).hexdigest()[:16]}.jsonl"


def release_order(splits: dict[str, list[Episode]]) -> list[Episode]:
    """train/valid/test laid out as one ``light_data.pkl`` from which ParlAI's rule recovers them."""
    test_positions, valid_positions = split_positions()
    total = len(splits["train"]) + len(valid_positions) + len(test_positions)
    slots: list[Episode | None] = [None] * total
    # Sorted positions: the split rule keeps file order, so each split reads back in the order
    # it was generated.
    for position, episode in zip(sorted(test_positions), splits["test"]):
        slots[position] = episode
    for position, episode in zip(sorted(valid_positions), splits["valid"]):
        slots[position] = episode
    train = iter(splits["train"])
    return [slot if slot is not None else next(train) for slot in slots]


def write_corpus(splits: dict[str, list[Episode]], directory: str | os.PathLike, config: SimConfig,
                 world: World, extra: dict | None = None) -> Path:
    """Write a corpus (release layout when the sizes allow, else one pickle per split) and its
    manifest, into a temporary sibling first so a crash never leaves half a corpus."""
    from zoo.files import replace_directory

    directory = Path(directory)
    with replace_directory(directory) as staging:
        if config.release_layout:
            dump_pickle([e.to_raw() for e in release_order(splits)], staging / "light_data.pkl")
            dump_pickle([e.to_raw() for e in splits["test_unseen"]], staging / "light_unseen_data.pkl")
        else:
            for split, episodes in splits.items():
                dump_pickle([e.to_raw() for e in episodes], staging / f"light_sim_{split}.pkl")
        manifest = {
            "label": config.label,
            "note": f"{config.label} is a generated stand-in for the LIGHT dialogues, not LIGHT itself."
                    + (" Its speech is written by a small language model (zoo.light.sim_llm_speech)."
                       if config.speech == "llm" else ""),
            "version": SIM_VERSION,
            "config": asdict(config),
            "world": world.summary(),
            "layout": "release" if config.release_layout else "splits",
            "dialogues": {split: len(episodes) for split, episodes in splits.items()},
            **(extra or {}),
        }
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return directory


def load_sim_corpus(directory: str | os.PathLike) -> dict[str, list[Episode]]:
    """The four splits of a LIGHT-sim corpus directory (either layout)."""
    directory = Path(directory)
    if (directory / "light_data.pkl").is_file():
        from zoo.light.release import load_release

        return load_release(directory, verify=False)
    files = {split: directory / f"light_sim_{split}.pkl" for split in SPLITS}
    missing = [str(path) for path in files.values() if not path.is_file()]
    if missing:
        raise FileNotFoundError(f"{directory} is not a LIGHT-sim corpus: missing {', '.join(missing)}")
    return {split: load_episodes(path, verify=False) for split, path in files.items()}


def sim_corpus_dir(config: SimConfig = SimConfig(), data_dir: str | os.PathLike | None = None,
                   world: World | None = None, root: str | os.PathLike | None = None,
                   speech_identity: str = "") -> tuple[Path, World]:
    """Where the corpus of ``config`` lives in the cache (``$ZOO_CACHE/light/sim/<fingerprint>``)."""
    world = world or load_world(data_dir, config.world)
    base = Path(root) if root is not None else cache_dir() / "light" / "sim"
    return base / config.fingerprint(world, speech_identity), world


def ensure_sim_corpus(config: SimConfig = SimConfig(), data_dir: str | os.PathLike | None = None,
                      root: str | os.PathLike | None = None) -> Path:
    """The cached corpus of ``config``, generated (and timed, in its manifest) if absent.

    Generation happens under a file lock beside the corpus, so concurrent processes on one
    machine (the ranks of a DDP run with a cold cache) build it once: the others wait and
    then read the finished corpus."""
    from filelock import FileLock

    writer = llm_writer(config) if config.speech == "llm" else None
    directory, world = sim_corpus_dir(config, data_dir, root=root, speech_identity=writer.identity if writer else "")
    if (directory / MANIFEST).is_file():
        return directory
    directory.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(directory.parent / f".{directory.name}.lock")):
        if (directory / MANIFEST).is_file():  # another process built it while we waited
            return directory
        log.warning("generating %s (%s world, %s dialogues) into %s", config.label, world.source,
                    sum(config.sizes().values()), directory)
        line_cache = default_line_cache(writer.identity, root) if writer else None
        splits, extra = build_corpus(config, world, line_cache, writer)
        return write_corpus(splits, directory, config, world, extra)


def load_manifest(directory: str | os.PathLike) -> dict:
    path = Path(directory) / MANIFEST
    return json.loads(path.read_text()) if path.is_file() else {}
