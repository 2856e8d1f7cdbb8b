"""Stage one chat as the 2019 collection did: two characters in a room with its objects (docs/light_data.md §7a).

From a room of the :class:`~zoo.light.world.World`: every object mentioned in the
description is placed (names of more than 8 words skipped), each suggested extra object with
probability 1/2 (more than 5 words skipped); characters come from the room's lists (extras
with probability 1/2, object-like characters with probability 0.05), topped up from a pool to
at least two, shuffled; the first two are the players, a third becomes a silent NPC. Each
player keeps each of its carried, worn and wielded objects with probability 1/2 (worn and
wielded ones start equipped). Plural things are named by a random base form, characters in
lower case. Names stay unique so that every command names one thing.

Two choices of ours, made so that a recorded episode determines its starting state (see
:func:`zoo.light.replay.initial_graph`): the NPC carries nothing, and nothing starts inside a
container. Rooms without object lists (the flat world) get a few random objects instead.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Sequence

from zoo.light.engine import Engine
from zoo.light.graph import GameGraph
from zoo.light.world import CharacterSpec, ObjectSpec, RoomSpec, World

MAX_EXTRA_OBJECT_WORDS = 5
MAX_ROOM_OBJECT_WORDS = 8
OBJECT_CHARACTER_KEEP = 0.05
RANDOM_OBJECTS = (3, 6)


@dataclass
class Player:
    """A player of the chat: its game name, persona block and catalogue entry."""

    name: str
    persona: str
    spec: CharacterSpec


@dataclass
class Scene:
    """A staged chat: the room, the live engine, the two players, an optional NPC, and the
    description of every object placed (keyed by node name)."""

    room: RoomSpec
    engine: Engine
    players: tuple[Player, Player]
    npc: str | None = None
    descriptions: dict[str, str] = field(default_factory=dict)
    specs: dict[str, ObjectSpec] = field(default_factory=dict)

    @property
    def graph(self) -> GameGraph:
        return self.engine.graph


def display_name(spec: ObjectSpec | CharacterSpec, rng: random.Random) -> str:
    """A plural thing is named by a random base form, otherwise by its name (whitespace
    tidied: a few real names carry stray spaces, and commands split on them)."""
    name = rng.choice(spec.base_form) if spec.is_plural and spec.base_form else spec.name
    return " ".join(name.split())


def stage_chat(world: World, room_id: int, rng: random.Random, pool: Sequence[int], engine_seed: int = 0,
               cast: Sequence[int] = ()) -> Scene:
    """Build the world of one chat in ``room_id``; top-up characters come from ``pool`` (ids of
    characters that have a persona). ``cast``: up to two character ids seated first, as
    ``players[0]`` and ``players[1]`` (an interactive game names who plays whom); the rest of
    the scene is drawn as usual. Without a cast the draws are exactly those of a LIGHT-sim chat."""
    room = world.rooms[room_id]
    graph = GameGraph()
    room_node = graph.add_room(room.name, room.description, room.category)
    players, npc = _choose_characters(world, room, rng, pool, graph, room_node.id, tuple(cast))

    descriptions: dict[str, str] = {}
    specs: dict[str, ObjectSpec] = {}

    def place(spec: ObjectSpec, parent: str, equipped: str | None = None) -> None:
        if not spec.descriptions:
            return
        name = display_name(spec, rng)
        if graph.has_name(name) or not name.strip():
            return
        classes = spec.affordances.classes()
        graph.add_object(name, parent, rng.choice(spec.descriptions), classes, equipped, spec.affordances.surface)
        descriptions[name] = graph.resolve(name).description
        specs[name] = spec

    placed: set[int] = set()
    for object_id in room.in_objects:
        spec = world.objects.get(object_id)
        if spec is not None and object_id not in placed and len(spec.name.split()) <= MAX_ROOM_OBJECT_WORDS:
            placed.add(object_id)
            place(spec, room_node.id)
    for object_id in room.ex_objects:
        spec = world.objects.get(object_id)
        keep = rng.random() < 0.5
        if keep and spec is not None and object_id not in placed and len(spec.name.split()) <= MAX_EXTRA_OBJECT_WORDS:
            placed.add(object_id)
            place(spec, room_node.id)
    if not room.in_objects and not room.ex_objects and world.objects:
        for object_id in rng.sample(sorted(world.objects), min(len(world.objects), rng.randint(*RANDOM_OBJECTS))):
            place(world.objects[object_id], room_node.id)
    for player in players:
        for ids, slot in ((player.spec.carrying, None), (player.spec.wearing, "wear"), (player.spec.wielding, "wield")):
            for object_id in ids:
                spec = world.objects.get(object_id)
                if rng.random() < 0.5 and spec is not None and object_id not in placed:
                    placed.add(object_id)
                    place(spec, graph.resolve(player.name).id, slot)
    return Scene(room, Engine(graph, engine_seed), (players[0], players[1]), npc, descriptions, specs)


def _choose_characters(world: World, room: RoomSpec, rng: random.Random, pool: Sequence[int], graph: GameGraph,
                       room_node: str, cast: tuple[int, ...] = ()) -> tuple[list[Player], str | None]:
    if len(cast) > 2 or len(set(cast)) != len(cast):
        raise ValueError(f"a cast is at most two distinct characters, got {list(cast)}")
    for character_id in cast:
        if character_id not in world.characters or not world.characters[character_id].persona:
            raise ValueError(f"character {character_id} is not in the world or has no persona to play")
    chosen: list[CharacterSpec] = []
    seen: set[int] = set(cast)

    def consider(character_id: int, keep: float) -> None:
        spec = world.characters.get(character_id)
        if spec is None or character_id in seen or not spec.persona:
            return
        if spec.char_type == "object":
            keep = OBJECT_CHARACTER_KEEP
        if rng.random() < keep:
            seen.add(character_id)
            chosen.append(spec)

    for character_id in room.ex_characters:
        consider(character_id, 0.5)
    for character_id in room.in_characters:
        consider(character_id, 1.0)
    candidates = pool
    if len({*candidates, *seen}) < 2:
        raise ValueError(f"room {room.id} ({room.name}): fewer than two characters with a persona to play")
    while len(chosen) + len(cast) < 2:
        character_id = rng.choice(candidates)
        if character_id not in seen:
            seen.add(character_id)
            chosen.append(world.characters[character_id])
    rng.shuffle(chosen)
    chosen = [world.characters[i] for i in cast] + chosen

    players: list[Player] = []
    npc = None
    for spec in chosen:
        name = display_name(spec, rng).lower().strip()
        if not name or graph.has_name(name):
            continue
        if len(players) < 2:
            graph.add_agent(name, room_node, spec.persona, spec.description)
            players.append(Player(name, spec.persona, spec))
        else:
            graph.add_agent(name, room_node, spec.persona, spec.description)
            npc = name
            break
    for _ in range(1000):  # a name clash left a seat empty: fill it from the pool
        if len(players) == 2:
            break
        spec = world.characters[rng.choice(candidates)]
        name = display_name(spec, rng).lower().strip()
        if name and not graph.has_name(name):
            graph.add_agent(name, room_node, spec.persona, spec.description)
            players.append(Player(name, spec.persona, spec))
    if len(players) < 2:
        raise ValueError(f"room {room.id} ({room.name}): could not seat two players with distinct names")
    return players, npc
