"""Replay a recorded episode through the engine and report every disagreement.

The release records, per turn, the room's objects, the speaker's inventory, the valid actions
offered and the action taken. ``replay_episode`` rebuilds the starting world from the record
alone, runs the turns through :class:`~zoo.light.engine.Engine` and checks at every turn that
the state matches the record, that the offered actions are exactly the engine's valid ones,
and that the action taken succeeds. LIGHT-sim episodes must replay without a single problem;
on the real release it is a diagnostic (the crowd data has known anomalies, docs/light_data.md §9).

Starting state: the objects in the room at turn 0, the first speaker's inventory at turn 0 and
the second's at turn 1 (undoing a first-turn ``give``/``steal`` that involved them), other
characters in ``room_agents`` with nothing (LIGHT-sim's NPCs carry nothing). Object classes
come from the world when one is given and names a unique object, otherwise from the record
itself (an object offered for ``wear`` is wearable, ``put X in O`` makes O a container, one
never offered for ``get`` cannot be picked up). Health is set very high
because the record does not hold the engine's dice.
"""

from __future__ import annotations

from collections import defaultdict

from zoo.light.engine import Engine
from zoo.light.graph import GameGraph
from zoo.light.records import Episode
from zoo.light.world import World

REPLAY_HEALTH = 10**6


def strip_article(text: str) -> str:
    """Invert the release's object string: ``an altar`` -> ``altar``, ``a A quiver`` -> ``A quiver``."""
    if text.startswith("an ") and text[3:4] in tuple("aeiou"):
        return text[3:]
    if text.startswith("a "):
        return text[2:]
    return text


def inferred_classes(episode: Episode) -> dict[str, set[str]]:
    """Object classes implied by the recorded valid actions (see the module docstring)."""
    classes: dict[str, set[str]] = defaultdict(set)
    gettable: set[str] = set()
    seen: set[str] = set()
    verbs = {"wear": "wearable", "wield": "weapon", "eat": "food", "drink": "drink"}
    for turn in episode.turns:
        seen.update(strip_article(o) for o in turn.room_objects + turn.inventory)
        for action in turn.available_actions:
            verb, _, rest = action.partition(" ")
            if verb in verbs:
                classes[rest].add(verbs[verb])
            elif verb == "put" and " in " in rest:
                # The container is the longest suffix after " in " that names a known thing;
                # resolved later against the graph, so record every split.
                parts = rest.split(" in ")
                for i in range(1, len(parts)):
                    classes[" in ".join(parts[i:])].add("container?")
            elif verb == "get":
                gettable.add(rest)
                if " from " in rest:
                    parts = rest.split(" from ")
                    for i in range(1, len(parts)):
                        gettable.add(" from ".join(parts[:i]))
    # Only ``get`` checks gettability: an object never offered for ``get`` (on the floor or in
    # a container) cannot be picked up, and for one always held by someone the flag is moot.
    for name in seen - gettable:
        classes[name].add("not_gettable")
    return classes


def initial_graph(episode: Episode, world: World | None = None) -> GameGraph:
    """The starting world of ``episode`` rebuilt from its record."""
    graph = GameGraph()
    room = graph.add_room(episode.setting.name, episode.setting.description, episode.setting.category)
    names = [agent.name for agent in episode.agents]
    first_agents = episode.turns[0].room_agents if episode.turns and episode.turns[0].room_agents else names
    for name in [*names, *[n for n in first_agents if n not in names]]:
        if not graph.has_name(name):
            graph.add_agent(name, room.id, health=REPLAY_HEALTH)
    inferred = inferred_classes(episode)
    descriptions = episode.descriptions

    def classes_of(name: str) -> frozenset[str]:
        spec = world.object_named(name) if world is not None else None
        if spec is not None:
            return spec.affordances.classes()
        found = {c for c in inferred.get(name, set()) if c != "container?"}
        if "container?" in inferred.get(name, set()):
            found.add("container")
        return frozenset(found)

    def add(text: str, parent: str, equipped: str | None = None) -> None:
        name = strip_article(text)
        if not graph.has_name(name):
            graph.add_object(name, parent, descriptions.get(text, ""), classes_of(name), equipped)

    if episode.turns:
        first = episode.turns[0]
        for text in first.room_objects:
            add(text, room.id)
        _add_inventory(add, first.carrying, first.wearing, first.wielding, graph.resolve(names[0]).id)
    if len(episode.turns) > 1:
        second = episode.turns[1]
        carrying = list(second.carrying)
        first_action = episode.turns[0].action or ""
        for text in list(carrying):
            if first_action == f"give {strip_article(text)} to {names[1]}":
                carrying.remove(text)
        if first_action.startswith("steal ") and first_action.endswith(f" from {names[1]}"):
            carrying.append("a " + first_action[len("steal "): -len(f" from {names[1]}")])
        _add_inventory(add, carrying, second.wearing, second.wielding, graph.resolve(names[1]).id)
    return graph


def _add_inventory(add, carrying, wearing, wielding, agent_id: str) -> None:
    for text in carrying:
        add(text, agent_id)
    for text in wearing:
        add(text, agent_id, "wear")
    for text in wielding:
        add(text, agent_id, "wield")


def replay_episode(episode: Episode, world: World | None = None) -> list[str]:
    """Every disagreement between the record and the engine (empty: the episode is consistent)."""
    problems: list[str] = []
    try:
        engine = Engine(initial_graph(episode, world))
    except (KeyError, ValueError) as error:
        return [f"cannot rebuild the starting world: {error}"]
    for t, turn in enumerate(episode.turns):
        speaker = episode.agents[t % 2].name
        carrying, wearing, wielding = engine.inventory(speaker)
        if sorted(carrying) != sorted(turn.carrying) or sorted(wearing) != sorted(turn.wearing) \
                or sorted(wielding) != sorted(turn.wielding):
            problems.append(f"turn {t}: {speaker}'s inventory is {carrying}/{wearing}/{wielding}, "
                            f"the record says {list(turn.carrying)}/{list(turn.wearing)}/{list(turn.wielding)}")
        if sorted(engine.room_objects(speaker)) != sorted(turn.room_objects):
            problems.append(f"turn {t}: room objects are {engine.room_objects(speaker)}, "
                            f"the record says {list(turn.room_objects)}")
        valid = engine.valid_actions(speaker)
        if valid != sorted(turn.available_actions):
            missing = sorted(set(turn.available_actions) - set(valid))
            extra = sorted(set(valid) - set(turn.available_actions))
            problems.append(f"turn {t}: valid actions differ (recorded but not valid: {missing}; "
                            f"valid but not recorded: {extra})")
        if turn.action is not None:
            result = engine.execute(speaker, turn.action)
            if not result.ok:
                problems.append(f"turn {t}: {speaker} cannot '{turn.action}': {result.reason}")
            elif turn.action not in turn.available_actions:
                problems.append(f"turn {t}: '{turn.action}' was not among the offered actions")
        if turn.emote is not None and not engine.emote(speaker, turn.emote).ok:
            problems.append(f"turn {t}: '{turn.emote}' is not an emote")
    return problems
