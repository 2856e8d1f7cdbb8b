"""One LIGHT-sim chat: two characters in a room, turn by turn, refereed by the game engine.

:class:`_Chat` decides each turn's speech (from the :mod:`zoo.light.sim.speech` frames), action
and emote; :func:`simulate_episode` executes the actions through the engine and records the
turns the way the release records them (``available_actions`` before the turn, the room's
objects, the speaker's inventory). What each turn's speech does is kept as a plan
(:attr:`_TurnNote.acts`) for the LIGHT-sim v2 writer to rewrite.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Sequence

from zoo.light import actions
from zoo.light.candidates import EMOTES
from zoo.light.records import Agent, Episode, LightDataError, ObjectDescription, Setting, Turn
from zoo.light.scene import Scene, stage_chat
from zoo.light.sim import speech as say
from zoo.light.sim.config import SimConfig
from zoo.light.world import World

P_NAME = 0.2
"""Chance that a character addresses the other by name rather than "friend", "stranger"..."""


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
    (:mod:`zoo.light.sim.llm_speech`). Recording it draws nothing from the RNG."""


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

