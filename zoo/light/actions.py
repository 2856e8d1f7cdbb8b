"""The 12 verbs of the 2019 LIGHT engine (docs/light_data.md §7a, the paper's Table 12): constraints and effects.

Every verb is three small functions over a :class:`~zoo.light.graph.GameGraph`: *parse*
(command text -> nodes), *check* (``None`` when allowed, else the reason in words, e.g.
"you are not carrying the shovel") and *apply* (the effect). ``valid_actions`` lists every
canonical command that passes its check, which is exactly the list the collection showed a
player (``available_actions``), sorted. Nothing here raises on a bad command: the reason is
returned instead, so a model or a person typing free text never crashes the game.

Canonical texts: ``get O`` (``get O from C`` when O lies in a container), ``put O in C``,
``drop O``, ``give O to A``, ``steal O from A``, ``wear O``, ``wield O``, ``remove O``,
``eat O``, ``drink O``, ``hit A``, ``hug A``; object names keep their casing.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from zoo.light.graph import GameGraph, Node

VERBS = ("get", "put", "drink", "eat", "steal", "hit", "hug", "wear", "wield", "drop", "give", "remove")
"""The verbs whose commands form ``available_actions`` (docs/light_data.md §2)."""

PREPOSITIONS = {"get": ("from",), "put": ("in", "on"), "give": ("to",), "steal": ("from",)}
"""Two-argument verbs and the word between their arguments (``put`` accepts ``on`` for surfaces)."""

THIRD_PERSON = {"get": "gets", "put": "puts", "drink": "drinks", "eat": "eats", "steal": "steals", "hit": "hits",
                "hug": "hugs", "wear": "wears", "wield": "wields", "drop": "drops", "give": "gives",
                "remove": "removes"}


@dataclass(frozen=True)
class Command:
    """A parsed command: the verb, its object or agent, and the second argument if any."""

    verb: str
    target: str
    other: str | None = None


def canonical(graph: GameGraph, command: Command) -> str:
    """The release's text for a command (``get O from C`` only when C is a container object)."""
    target = graph.nodes[command.target].name
    verb = command.verb
    if verb == "get":
        holder = graph.nodes[command.other] if command.other else graph.parent(graph.nodes[command.target])
        if holder is not None and holder.is_object:
            return f"get {target} from {holder.name}"
        return f"get {target}"
    if verb == "put":
        return f"put {target} in {graph.nodes[command.other].name}"  # type: ignore[index]
    if verb == "give":
        return f"give {target} to {graph.nodes[command.other].name}"  # type: ignore[index]
    if verb == "steal":
        return f"steal {target} from {graph.nodes[command.other].name}"  # type: ignore[index]
    return f"{verb} {target}"


# ---------------------------------------------------------------------------------- parsing
MAX_COMMAND_CHARACTERS = 300
"""Longer commands are refused: the longest LIGHT object names are a few dozen characters,
and trying every split at a preposition costs a lookup per split, so unbounded input would
make parsing quadratic."""


def parse(graph: GameGraph, text: str) -> Command | str:
    """A :class:`Command`, or a reason string when the text names no known verb or thing.

    Names may contain spaces and even the prepositions (``bread in a basket``), so every
    split at a preposition is tried and the one naming two known things wins. Text over
    :data:`MAX_COMMAND_CHARACTERS` is refused before any of that.
    """
    if len(text) > MAX_COMMAND_CHARACTERS:
        return f"that command is too long ({len(text)} characters; at most {MAX_COMMAND_CHARACTERS})"
    words = text.strip().split()
    if not words:
        return "say what you want to do"
    verb, rest = words[0].lower(), " ".join(words[1:])
    if verb not in VERBS:
        return f"'{words[0]}' is not something you can do here; the actions are {', '.join(sorted(VERBS))}"
    if not rest:
        return f"{verb} what?"
    whole = graph.find(rest)
    if verb not in PREPOSITIONS:
        return f"there is no {rest} here" if whole is None else Command(verb, whole.id)
    if whole is not None and verb == "get":
        return Command(verb, whole.id)
    head, _, last = rest.rpartition(" ")
    if last.lower() in PREPOSITIONS[verb] and graph.find(head) is not None:
        return f"{verb} the {graph.find(head).name} {last.lower()} what?"  # type: ignore[union-attr]
    split = _split(graph, verb, rest)
    if split is None:
        if whole is not None:
            word = PREPOSITIONS[verb][0]
            return f"{verb} the {whole.name} {word} what?"
        return _split_reason(graph, verb, rest)
    return split


def _split(graph: GameGraph, verb: str, rest: str) -> Command | None:
    lowered = rest.lower()
    for word in PREPOSITIONS[verb]:
        marker = f" {word} "
        start = lowered.find(marker)
        while start != -1:
            left, right = graph.find(rest[:start]), graph.find(rest[start + len(marker):])
            if left is not None and right is not None:
                return Command(verb, left.id, right.id)
            start = lowered.find(marker, start + 1)
    return None


def _split_reason(graph: GameGraph, verb: str, rest: str) -> str:
    lowered = rest.lower()
    for word in PREPOSITIONS[verb]:
        start = lowered.find(f" {word} ")
        if start != -1:
            left, right = rest[:start], rest[start + len(word) + 2:]
            if graph.find(left) is None:
                return f"there is no {left} here"
            return f"there is no {right} here"
    return f"there is no {rest} here"


# ---------------------------------------------------------------------------------- checks
def check(graph: GameGraph, actor: Node, command: Command) -> str | None:
    """``None`` when ``actor`` may run ``command`` now, else the reason (second person)."""
    if actor.dead:
        return "you are dead"
    target = graph.nodes.get(command.target)
    other = graph.nodes.get(command.other) if command.other else None
    if target is None or (command.other is not None and other is None):
        return "that is not here any more"
    room = graph.room_of(actor)
    if target.kind == "room" or graph.room_of(target) is not room:
        return f"there is no {target.name} here"
    if other is not None and (other.kind == "room" or graph.room_of(other) is not room):
        return f"there is no {other.name} here"
    return _CHECKS[command.verb](graph, actor, target, other)


def _held(graph: GameGraph, actor: Node, thing: Node) -> str | None:
    if not thing.is_object:
        return f"the {thing.name} is not an object"
    if thing.parent != actor.id:
        return f"you are not carrying the {thing.name}"
    return None


def _held_free(graph: GameGraph, actor: Node, thing: Node) -> str | None:
    reason = _held(graph, actor, thing)
    if reason is None and thing.equipped is not None:
        verb = "wearing" if thing.equipped == "wear" else "wielding"
        return f"you are {verb} the {thing.name}; remove it first"
    return reason


def _other_agent(actor: Node, agent: Node | None, verb: str) -> str | None:
    if agent is None or not agent.is_agent:
        return f"you can only {verb} someone"
    if agent.id == actor.id:
        return f"you cannot {verb} yourself"
    if agent.dead:
        return f"the {agent.name} is dead"
    return None


def _check_get(graph: GameGraph, actor: Node, thing: Node, source: Node | None) -> str | None:
    if not thing.is_object:
        return f"you cannot pick up the {thing.name}"
    holder = graph.parent(thing)
    assert holder is not None
    if holder.id == actor.id:
        return f"you already have the {thing.name}"
    if source is not None and source.id != holder.id:
        return f"the {thing.name} is not in the {source.name}"
    if thing.is_a("not_gettable") or thing.is_a("described"):
        return f"the {thing.name} cannot be picked up"
    if holder.is_agent:
        return f"the {holder.name} has the {thing.name}"
    if holder.is_object and not holder.is_a("container"):
        return f"the {holder.name} is not a container"
    if holder.locked:
        return f"the {holder.name} is locked"
    if _in_someone_else(graph, actor, holder):
        return f"the {holder.name} belongs to someone else"
    if not graph.fits(thing, actor):
        return f"you cannot carry the {thing.name}; your hands are full"
    return None


def _in_someone_else(graph: GameGraph, actor: Node, node: Node) -> bool:
    """Whether ``node`` sits (at any depth) inside an agent other than ``actor``."""
    while node.kind != "room":
        if node.is_agent and node.id != actor.id:
            return True
        node = graph.nodes[node.parent]  # type: ignore[index]
    return False


def _check_put(graph: GameGraph, actor: Node, thing: Node, container: Node | None) -> str | None:
    reason = _held_free(graph, actor, thing)
    if reason is not None:
        return reason
    assert container is not None
    if not container.is_object or not container.is_a("container"):
        return f"the {container.name} is not a container"
    if container.id == thing.id or graph.is_inside(container, thing):
        return f"you cannot put the {thing.name} inside itself"
    if _in_someone_else(graph, actor, container):
        return f"the {container.name} belongs to someone else"
    if container.locked:
        return f"the {container.name} is locked"
    if not graph.fits(thing, container):
        return f"the {container.name} is full"
    return None


def _check_drop(graph: GameGraph, actor: Node, thing: Node, _: Node | None) -> str | None:
    reason = _held_free(graph, actor, thing)
    if reason is None and not graph.fits(thing, graph.room_of(actor)):
        return "there is no room here to drop it"
    return reason


def _check_give(graph: GameGraph, actor: Node, thing: Node, agent: Node | None) -> str | None:
    reason = _held_free(graph, actor, thing) or _other_agent(actor, agent, "give things to")
    if reason is None and not graph.fits(thing, agent):  # type: ignore[arg-type]
        return f"the {agent.name} cannot carry any more"  # type: ignore[union-attr]
    return reason


def _check_steal(graph: GameGraph, actor: Node, thing: Node, agent: Node | None) -> str | None:
    reason = _other_agent(actor, agent, "steal from")
    if reason is not None:
        return reason
    assert agent is not None
    if not thing.is_object:
        return f"you cannot steal the {thing.name}"
    if thing.parent != agent.id:
        return f"the {agent.name} does not have the {thing.name}"
    if thing.equipped is not None:
        verb = "wearing" if thing.equipped == "wear" else "wielding"
        return f"the {agent.name} is {verb} the {thing.name}"
    if not graph.fits(thing, actor):
        return f"you cannot carry the {thing.name}; your hands are full"
    return None


def _check_equip(cls: str, verb: str):
    def check_equip(graph: GameGraph, actor: Node, thing: Node, _: Node | None) -> str | None:
        reason = _held(graph, actor, thing)
        if reason is not None:
            return reason
        if thing.equipped is not None:
            return f"you are already {'wearing' if thing.equipped == 'wear' else 'wielding'} the {thing.name}"
        if not thing.is_a(cls):
            return f"you cannot {verb} the {thing.name}"
        return None

    return check_equip


def _check_remove(graph: GameGraph, actor: Node, thing: Node, _: Node | None) -> str | None:
    reason = _held(graph, actor, thing)
    if reason is None and thing.equipped is None:
        return f"you are not wearing or wielding the {thing.name}"
    return reason


def _check_consume(cls: str, verb: str):
    def check_consume(graph: GameGraph, actor: Node, thing: Node, _: Node | None) -> str | None:
        reason = _held_free(graph, actor, thing)
        if reason is None and not thing.is_a(cls):
            return f"you cannot {verb} the {thing.name}"
        return reason

    return check_consume


def _check_hit(graph: GameGraph, actor: Node, agent: Node, _: Node | None) -> str | None:
    reason = _other_agent(actor, agent, "hit")
    if reason is None and agent.is_a("described"):
        return f"you cannot hit the {agent.name}"
    return reason


def _check_hug(graph: GameGraph, actor: Node, agent: Node, _: Node | None) -> str | None:
    return _other_agent(actor, agent, "hug")


_CHECKS = {
    "get": _check_get, "put": _check_put, "drop": _check_drop, "give": _check_give, "steal": _check_steal,
    "wear": _check_equip("wearable", "wear"), "wield": _check_equip("weapon", "wield"), "remove": _check_remove,
    "eat": _check_consume("food", "eat"), "drink": _check_consume("drink", "drink"),
    "hit": _check_hit, "hug": _check_hug,
}


# ---------------------------------------------------------------------------------- effects
@dataclass(frozen=True)
class Effect:
    """What happened: the actor's view and everyone else's."""

    message: str
    broadcast: str


def apply(graph: GameGraph, actor: Node, command: Command, rng: random.Random) -> Effect:
    """Carry out a command that passed :func:`check`."""
    target = graph.nodes[command.target]
    other = graph.nodes[command.other] if command.other else None
    name, who = target.name, actor.name
    verb = command.verb
    if verb == "get":
        holder = graph.parent(target)
        graph.move(target.id, actor.id)
        where = f" from the {holder.name}" if holder is not None and holder.is_object else ""
        return Effect(f"You get the {name}{where}.", f"The {who} gets the {name}{where}.")
    if verb == "put":
        assert other is not None
        graph.move(target.id, other.id)
        return Effect(f"You put the {name} {other.surface} the {other.name}.",
                      f"The {who} puts the {name} {other.surface} the {other.name}.")
    if verb == "drop":
        graph.move(target.id, graph.room_of(actor).id)
        return Effect(f"You drop the {name}.", f"The {who} drops the {name}.")
    if verb == "give":
        assert other is not None
        graph.move(target.id, other.id)
        return Effect(f"You give the {name} to the {other.name}.", f"The {who} gives the {name} to the {other.name}.")
    if verb == "steal":
        assert other is not None
        graph.move(target.id, actor.id)
        return Effect(f"You steal the {name} from the {other.name}.",
                      f"The {who} steals the {name} from the {other.name}.")
    if verb in ("wear", "wield"):
        graph.equip(target.id, verb)
        return Effect(f"You {verb} the {name}.", f"The {who} {THIRD_PERSON[verb]} the {name}.")
    if verb == "remove":
        graph.unequip(target.id)
        return Effect(f"You remove the {name}.", f"The {who} removes the {name}.")
    if verb in ("eat", "drink"):
        graph.delete(target.id)
        # food_energy is 0 for every object of the collection: health is unchanged.
        return Effect(f"You {verb} the {name}. Yum.", f"The {who} {THIRD_PERSON[verb]} the {name}.")
    if verb == "hit":
        return _hit(graph, actor, target, rng)
    return Effect(f"You hug the {name}.", f"The {who} hugs the {name}.")


def _hit(graph: GameGraph, actor: Node, target: Node, rng: random.Random) -> Effect:
    """Attack roll against defence roll; the difference is damage. At no health the target
    dies: its belongings fall to the floor and it leaves the game."""
    damage = max(0, rng.randint(0, max_damage(actor)) - rng.randint(0, target.defense))
    target.health -= damage
    if target.health <= 0:
        room = graph.room_of(target)
        for item_id in list(target.contents):
            graph.unequip(item_id)
            graph.move(item_id, room.id)
        target.dead = True
        return Effect(f"You hit the {target.name}. The {target.name} falls and does not get up.",
                      f"The {actor.name} hits the {target.name}, who falls and does not get up.")
    hurt = "It hurts." if damage else "The blow glances off."
    return Effect(f"You hit the {target.name}. {hurt}", f"The {actor.name} hits the {target.name}. {hurt}")


def max_damage(agent: Node) -> int:
    """The largest damage one hit by ``agent`` can do: 2 plus its attack."""
    return 2 + agent.attack


# ---------------------------------------------------------------------------------- enumeration
def candidate_commands(graph: GameGraph, actor: Node) -> list[Command]:
    """Every command with arguments of a fitting kind (before the constraint checks)."""
    room = graph.room_of(actor)
    here = [n for n in graph.descendants(room) if n.id != actor.id]
    held = [graph.nodes[i] for i in actor.contents if graph.nodes[i].is_object]
    agents = [n for n in graph.children(room) if n.is_agent and n.id != actor.id]
    objects = [n for n in here if n.is_object]
    containers = [n for n in objects if n.is_a("container")]
    commands: list[Command] = []
    for thing in objects:
        if thing.parent != actor.id:
            holder = graph.parent(thing)
            commands.append(Command("get", thing.id, holder.id if holder is not None and holder.is_object else None))
    for thing in held:
        commands += [Command(verb, thing.id) for verb in ("drop", "wear", "wield", "remove", "eat", "drink")]
        commands += [Command("put", thing.id, c.id) for c in containers if c.id != thing.id]
        commands += [Command("give", thing.id, a.id) for a in agents]
    for agent in agents:
        commands += [Command("steal", graph.nodes[i].id, agent.id) for i in agent.contents]
        commands += [Command("hit", agent.id), Command("hug", agent.id)]
    return commands


def valid_actions(graph: GameGraph, actor: Node) -> list[str]:
    """Sorted canonical texts of every command ``actor`` may run now."""
    if actor.dead:
        return []
    texts = {canonical(graph, c) for c in candidate_commands(graph, actor) if check(graph, actor, c) is None}
    return sorted(texts)
