"""The LIGHT room of a game: which room and characters, staged as the collection staged a chat,
and the views of it a person reads (setting, who is here, what each one holds, what changed).

The room is staged by :func:`zoo.light.scene.stage_chat` (objects, belongings, an NPC), with
the person's character and the partner seated first when they are named. The game's turns
are kept as release :class:`~zoo.light.records.Turn` records, so the partner's model reads
the live game exactly as it read its training chats (:meth:`LightRoom.episode`).
"""

from __future__ import annotations

import difflib
import random
import secrets
import textwrap
from dataclasses import dataclass, field

from zoo.light.graph import Node
from zoo.light.records import Agent, Episode, ObjectDescription, Setting, Turn
from zoo.light.scene import Scene, stage_chat
from zoo.light.world import World, article_name

ARTICLES = ("a ", "an ", "the ", "some ")


def the(name: str) -> str:
    """``the <name>``, unless the world's name already starts with an article ("a scullery
    boy", "the tower" are names in the real LIGHT world)."""
    return name if name.lower().startswith(ARTICLES) else f"the {name}"


def a_or_an(name: str) -> str:
    """``a <name>`` or ``an <name>`` for a person to read: a name that already starts with an
    article keeps it ("a holy book", not the release's "an a holy book"; the models still read
    the release's strings, :func:`zoo.light.world.article_name`)."""
    if name.lower().startswith(ARTICLES):
        return name
    return ("an " if name[:1].lower() in "aeiou" and name[:1] else "a ") + name


def _close(name: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(name.lower(), list(dict.fromkeys(c.lower() for c in choices)), n=5, cutoff=0.5)
    return f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""


def find_room(world: World, name: str) -> int:
    """The id of the room called ``name`` (case-insensitive; a unique part of a name will do)."""
    wanted = " ".join(name.split()).lower()
    exact = sorted(i for i, room in world.rooms.items() if room.name.lower() == wanted)
    if exact:
        return exact[0]
    partial = sorted(i for i, room in world.rooms.items() if wanted and wanted in room.name.lower())
    if len(partial) == 1:
        return partial[0]
    if partial:
        names = ", ".join(repr(world.rooms[i].name) for i in partial[:6])
        raise ValueError(f"--room {name!r} matches {len(partial)} rooms ({names}{', ...' if len(partial) > 6 else ''}); "
                         f"give more of the name")
    raise ValueError(f"no room named {name!r} in the {world.source} world{_close(name, [r.name for r in world.rooms.values()])}")


def find_character(world: World, name: str, room_id: int | None = None) -> int:
    """The id of a playable character (one with a persona) called ``name``; among namesakes,
    one that belongs to ``room_id``, else the lowest id."""
    wanted = " ".join(name.split()).lower()
    playable = {i: c for i, c in world.characters.items() if c.persona}
    matches = sorted(i for i, c in playable.items() if c.name.lower() == wanted)
    if not matches:
        raise ValueError(f"no playable character named {name!r} in the {world.source} world"
                         f"{_close(name, [c.name for c in playable.values()])}")
    if room_id is not None:
        room = world.rooms[room_id]
        local = [i for i in matches if i in room.in_characters or i in room.ex_characters]
        matches = local or matches
    return matches[0]


def rooms_of(world: World, character_id: int) -> list[int]:
    """Rooms a character belongs to (listed in the room or linked from the character)."""
    spec = world.characters[character_id]
    linked = {i for i, r in world.rooms.items() if character_id in r.in_characters or character_id in r.ex_characters}
    linked.update(i for i in spec.room_ids if i in world.rooms)
    return sorted(linked)


@dataclass
class LightRoom:
    """A staged room with the person's character (``me``) and the partner, and the turns so far."""

    world: World
    scene: Scene
    me: str
    partner: str
    seed: int
    turns: list[Turn] = field(default_factory=list)

    @property
    def engine(self):
        return self.scene.engine

    @property
    def graph(self):
        return self.scene.graph

    @property
    def npc(self) -> str | None:
        return self.scene.npc

    def persona(self, who: str) -> str:
        return self.graph.resolve(who).persona

    # ------------------------------------------------------------------ the record models read
    def record_turn(self, who: str, speech: str | None = None, action: str | None = None,
                    emote: str | None = None, available: tuple[str, ...] | None = None) -> Turn:
        """A release turn by ``who`` with the world as it is now (call it before the turn's
        action runs, as the collection recorded it; ``available`` overrides the valid actions)."""
        agent = self.engine.agent(who)
        carrying, wearing, wielding = self.graph.inventory(agent)
        room = self.graph.room_of(agent)
        return Turn(
            speech=speech, action=action, emote=emote,
            available_actions=tuple(available if available is not None else self.engine.valid_actions(who)),
            room_objects=tuple(self.graph.room_objects(room)), carrying=tuple(carrying), wearing=tuple(wearing),
            wielding=tuple(wielding), character=who, room_agents=tuple(n.name for n in self.graph.agents_in(room)),
        )

    def episode(self, pending: Turn | None = None) -> Episode:
        """The game so far as a release episode: the person is ``agents[0]`` (who opens), the
        partner ``agents[1]``; ``pending`` is the partner's turn being decided."""
        room = self.scene.room
        turns = tuple(self.turns) + ((pending,) if pending is not None else ())
        objects = tuple(ObjectDescription(article_name(name), text) for name, text in self.scene.descriptions.items())
        return Episode(
            setting=Setting(room.name, room.category, room.description, room.background or None),
            agents=(Agent(self.me, self.persona(self.me)), Agent(self.partner, self.persona(self.partner))),
            turns=turns, objects=objects,
        )

    # ------------------------------------------------------------------ what a person reads
    def where_things_are(self) -> dict[str, str]:
        """Every object's place and every character's condition, in words: the state that
        actions change (compared before and after a turn by :func:`changes`)."""
        state: dict[str, str] = {}
        for node in self.graph.nodes.values():
            if node.is_object:
                state[the(node.name)] = self._place(node)
            elif node.is_agent:
                state[the(node.name)] = "dead" if node.dead else f"health {node.health}"
        return state

    def _place(self, node: Node) -> str:
        holder = self.graph.parent(node)
        if holder is None or holder.kind == "room":
            return "here"
        if holder.is_agent:
            how = {"wear": "worn", "wield": "wielded"}.get(node.equipped or "", "carried")
            return f"{how} by {the(holder.name)}{' (you)' if holder.name == self.me else ''}"
        return f"{holder.surface} {the(holder.name)}"

    def who_is_here(self) -> list[str]:
        agents = self.graph.agents_in(self.graph.room_of(self.engine.agent(self.me)))
        roles = {self.me: "you", self.partner: "your partner"}
        return [the(a.name) + (f" ({roles[a.name]})" if a.name in roles else "") for a in agents]

    def holdings(self, who: str) -> str:
        held: dict[str | None, list[str]] = {None: [], "wear": [], "wield": []}
        for item in self.graph.children(self.engine.agent(who)):
            held[item.equipped if item.equipped in held else None].append(a_or_an(item.name))
        carrying, wearing, wielding = held[None], held["wear"], held["wield"]
        parts = [f"{verb} {', '.join(items)}" for verb, items in
                 (("carries", carrying), ("wears", wearing), ("wields", wielding)) if items]
        return "; ".join(parts) if parts else "holds nothing"

    def objects_here(self) -> list[str]:
        room = self.graph.room_of(self.engine.agent(self.me))
        shown = []
        for node in self.graph.children(room):
            if node.is_object:
                inside = [a_or_an(self.graph.nodes[i].name) for i in node.contents]
                shown.append(a_or_an(node.name) + (f" ({node.surface} it: {', '.join(inside)})" if inside else ""))
        return shown

    def panel(self, width: int = 78) -> str:
        """The setting, your persona, who is here, the objects, and what everyone holds."""
        room = self.scene.room

        def wrap(text: str) -> str:
            return textwrap.fill(text, width, initial_indent="  ", subsequent_indent="  ")

        lines = [f"== {room.name} ({room.category}) ==", wrap(room.description or "(no description)"), "",
                 f"You are {the(self.me)}. Your persona:", wrap(self.persona(self.me) or "(none)"), "",
                 "Who is here: " + ", ".join(self.who_is_here()),
                 "Objects here: " + (", ".join(self.objects_here()) or "nothing")]
        agents = self.graph.agents_in(self.graph.room_of(self.engine.agent(self.me)))
        lines += [f"  {the(a.name)}{' (you)' if a.name == self.me else ''} {self.holdings(a.name)}" for a in agents]
        return "\n".join(lines)


def changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """What differs between two :meth:`LightRoom.where_things_are` states, one line each."""
    lines = [f"{thing}: {before[thing]} -> {after.get(thing, 'gone')}" for thing in before
             if before[thing] != after.get(thing, "gone")]
    lines += [f"{thing}: {after[thing]}" for thing in after if thing not in before]
    return lines


SEEDS = 1_000_000
"""Drawn seeds are below this: six digits at most, easy to type back after ``--seed``."""


def draw_seed() -> int:
    """A fresh seed for a game whose seed was not given: "a random room" is a different room
    each time, and the seed, once printed, replays it."""
    return secrets.randbelow(SEEDS)


def stage_room(world: World, room: str | None = None, me: str | None = None, partner: str | None = None,
               seed: int = 0) -> LightRoom:
    """Stage the game: ``room`` by name or ``"random"``/None; ``me`` and ``partner`` by name
    (None: drawn from the room as a LIGHT chat draws its two players). Without a room a named
    character plays in one of its own rooms. Seeded: the same arguments give the same game."""
    from zoo.light.sim import character_pools

    rng = random.Random(seed)
    if room is not None and room.strip().lower() != "random":
        room_id = find_room(world, room)
    else:
        own = rooms_of(world, find_character(world, me)) if me else []
        own = own or (rooms_of(world, find_character(world, partner)) if partner else [])
        choices = own or sorted(world.rooms)
        room_id = rng.choice(choices)
    me_id = find_character(world, me, room_id) if me else None
    partner_id = find_character(world, partner, room_id) if partner else None
    if me_id is not None and me_id == partner_id:
        raise ValueError(f"--as and --partner name the same character ({world.characters[me_id].name!r})")
    cast = tuple(i for i in (me_id, partner_id) if i is not None)
    seen_pool, unseen_pool = character_pools(world)
    pool = unseen_pool if world.rooms[room_id].unseen else seen_pool
    scene = stage_chat(world, room_id, rng, pool, engine_seed=seed, cast=cast)
    names = [p.name for p in scene.players]
    seated = [p.spec.id for p in scene.players]
    if list(cast) != seated[: len(cast)]:
        raise ValueError("the characters asked for could not both be seated (they share a name); choose another")
    if me_id is None and partner_id is not None:
        names.reverse()  # the partner was seated first
    return LightRoom(world, scene, me=names[0], partner=names[1], seed=seed)
