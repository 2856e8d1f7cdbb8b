"""LIGHT game engine: world loading, affordances, every verb's constraints and effects, emotes."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest

from tests.conftest import LIGHT_DATA

from zoo.light import actions
from zoo.light.engine import EMOTE_THIRD_PERSON, Engine
from zoo.light.environment import authored_world, load_world, world_from_environment
from zoo.light.graph import GameGraph, GraphError
from zoo.light.records import LightDataError
from zoo.light.release import ReleaseChecksumError
from zoo.light.safe_pickle import dump_pickle
from zoo.light.scene import stage_chat
from zoo.light.world import UNSEEN_CATEGORIES, Affordances, article_name

REPO = Path(__file__).resolve().parents[1]
LIGHT = LIGHT_DATA
needs_env = pytest.mark.skipif(not (LIGHT / "environment-full").is_dir(), reason="LIGHT environment files not found")


def make_world() -> Engine:
    """A hall with a knight (cloak worn, apple, ale, shovel), a thief (dagger wielded, coin) and things."""
    g = GameGraph()
    hall = g.add_room("hall", "A long hall.")
    g.add_agent("knight", hall.id, "I am a knight.")
    g.add_agent("thief", hall.id, "I steal.")
    g.add_object("sword", hall.id, "A sword.", frozenset({"weapon"}))
    g.add_object("rock", hall.id, "A huge rock.", frozenset({"not_gettable"}))
    g.add_object("chest", hall.id, "An old chest.", frozenset({"container", "not_gettable"}))
    g.add_object("box", hall.id, "A small box.", frozenset({"container"}))
    g.add_object("gem", "chest", "A gem.")
    g.add_object("cloak", "knight", "A cloak.", frozenset({"wearable"}), equipped="wear")
    g.add_object("apple", "knight", "An apple.", frozenset({"food"}))
    g.add_object("ale", "knight", "Some ale.", frozenset({"drink"}))
    g.add_object("shovel", "thief", "A shovel.")
    g.add_object("dagger", "thief", "A dagger.", frozenset({"weapon"}), equipped="wield")
    g.add_object("coin", "thief", "A coin.")
    return Engine(g, seed=3)


def where(engine: Engine, name: str) -> str:
    node = engine.graph.resolve(name)
    return engine.graph.nodes[node.parent].name


# ------------------------------------------------------------------------------------ world
def test_affordance_thresholds_follow_the_2019_rules():
    assert Affordances.from_fractions({"is_container": 0.51}).container
    assert not Affordances.from_fractions({"is_container": 0.5}).container
    surface = Affordances.from_fractions({"is_surface": 0.6})
    assert surface.container and surface.surface
    assert Affordances.from_fractions({"is_gettable": 0.33}).gettable
    assert not Affordances.from_fractions({"is_gettable": 0.32}).gettable
    assert Affordances.from_fractions({}).classes() == frozenset()  # unknown: gettable, no classes
    full = Affordances.from_fractions({k: 1.0 for k in ("is_food", "is_drink", "is_wearable", "is_weapon")})
    assert full.classes() == {"food", "drink", "wearable", "weapon"}
    assert "not_gettable" in Affordances.from_fractions({"is_gettable": 0.0}).classes()


def test_article_name_is_applied_blindly_as_in_the_release():
    assert article_name("altar") == "an altar"
    assert article_name("A quiver") == "a A quiver"
    assert article_name("a basket") == "an a basket"
    assert article_name("paint brushes") == "a paint brushes"


def test_authored_world_ships_with_the_package_and_is_complete():
    world = authored_world()
    summary = world.summary()
    assert summary["source"] == "authored" and summary["rooms"] >= 30 and summary["characters"] >= 40
    assert summary["objects"] >= 60
    assert {world.rooms[i].category for i in world.room_ids(unseen=True)} == UNSEEN_CATEGORIES
    assert all(c.persona.startswith("I ") for c in world.characters.values())  # first-person personas
    referenced = {o for r in world.rooms.values() for o in r.in_objects + r.ex_objects}
    referenced |= {o for c in world.characters.values() for o in c.carrying + c.wearing + c.wielding}
    assert referenced <= set(world.objects)
    for kind in ("container", "food", "drink", "wearable", "weapon"):
        assert any(getattr(o.affordances, kind) for o in world.objects.values()), kind


def test_no_data_falls_back_to_the_authored_world(tmp_path, monkeypatch):
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path))
    assert load_world().source == "authored"
    with pytest.raises(FileNotFoundError):
        load_world(source="official")


def test_official_environment_schema_with_int_keys_loads():
    raw = {
        "categories": {1: "Tavern"},
        "rooms": {5: {"room_id": 5, "setting": "Bar", "category": "Tavern", "description": "Dark.", "background": "Old.",
                      "neighbors": [9], "in_characters": [2], "ex_characters": [], "in_objects": [7], "ex_objects": []}},
        "neighbors": {9: {"room_id": 5, "destination": "street", "direction": "North", "connection": "a door",
                          "inverse_id": None}},
        "characters": {2: {"character_id": 2, "name": "barkeep", "personas": ["I pour drinks."], "desc": "Tall.",
                           "char_type": "person", "carrying_objects": [7, "mug", "unknown thing"],
                           "wearing_objects": [], "wielding_objects": []}},
        "objects": {7: {"object_id": 7, "name": "mug", "descriptions": ["A mug."], "is_gettable": 1.0,
                        "is_drink": 0.9, "is_container": 0.0, "is_surface": 0.0, "is_food": 0.0,
                        "is_wearable": 0.0, "is_weapon": 0.0}},
    }
    world = world_from_environment(raw, "official")
    assert world.rooms[5].exits[0].direction == "North"
    assert world.characters[2].carrying == (7, 7)  # an object given by name resolves; unknown names drop
    assert world.objects[7].affordances.drink
    with pytest.raises(LightDataError, match="characters"):
        world_from_environment({"rooms": raw["rooms"], "characters": {3: {"character_id": "x", "name": "a"}}})


def test_official_environment_pickle_is_verified_before_loading(tmp_path):
    dump_pickle({"rooms": {}}, tmp_path / "light_environment.pkl")
    with pytest.raises(ReleaseChecksumError, match="sha256"):
        load_world(tmp_path, source="official")


@needs_env
def test_real_environment_files_load_with_the_paper_unseen_split():
    world = load_world(LIGHT, source="environment-full")
    assert world.summary()["rooms"] == 661 and world.summary()["unseen_rooms"] == 73
    assert all(room_id >= 703 for room_id in world.room_ids(unseen=True))
    flat = load_world(LIGHT, source="environment-flat")
    assert len(flat.rooms) == 661 and len(flat.characters) == 1755 and len(flat.objects) == 3462


def test_graph_refuses_duplicate_names():
    g = GameGraph()
    room = g.add_room("hall")
    g.add_agent("knight", room.id)
    with pytest.raises(GraphError):
        g.add_object("Knight", room.id)


# ------------------------------------------------------------------------------------ verbs
def test_get_moves_an_object_into_the_actor():
    e = make_world()
    assert "get sword" in e.valid_actions("knight")
    result = e.execute("knight", "get sword")
    assert result.ok and result.command == "get sword" and where(e, "sword") == "knight"
    assert "thief" in result.broadcast or "knight" in result.broadcast


def test_get_constraints():
    e = make_world()
    assert e.check("knight", "get rock") == "the rock cannot be picked up"
    assert e.check("knight", "get apple") == "you already have the apple"
    assert e.check("knight", "get shovel") == "the thief has the shovel"
    assert e.check("knight", "get gem from box") == "the gem is not in the box"
    assert e.check("knight", "get unicorn") == "there is no unicorn here"
    full = make_world()
    for i in range(17):  # the knight holds 3 things; capacity 20
        full.graph.add_object(f"pebble {i}", "knight")
    assert full.check("knight", "get sword") == "you cannot carry the sword; your hands are full"


def test_get_from_a_container_uses_the_from_form():
    e = make_world()
    assert "get gem from chest" in e.valid_actions("knight") and "get gem" not in e.valid_actions("knight")
    assert e.execute("knight", "get gem from chest").ok and where(e, "gem") == "knight"
    e2 = make_world()
    result = e2.execute("knight", "get gem")  # typed without "from": still understood
    assert result.ok and result.command == "get gem from chest"


def test_put_moves_an_object_into_a_container():
    e = make_world()
    assert "put apple in box" in e.valid_actions("knight")
    assert e.execute("knight", "put apple in box").ok and where(e, "apple") == "box"
    assert e.execute("knight", "put ale on chest").command == "put ale in chest"  # canonical text uses "in"


def test_put_constraints():
    e = make_world()
    assert e.check("knight", "put apple in rock") == "the rock is not a container"
    assert e.check("knight", "put cloak in box") == "you are wearing the cloak; remove it first"
    assert e.check("knight", "put shovel in box") == "you are not carrying the shovel"
    assert e.check("knight", "put apple in") == "put the apple in what?"
    e.execute("knight", "get box")
    assert e.check("knight", "put box in box") == "you cannot put the box inside itself"
    for name in ("pebble a", "pebble b"):
        e.graph.add_object(name, "chest")
    assert e.check("knight", "put apple in chest") == "the chest is full"  # gem + 2 pebbles = capacity 3


def test_drop_moves_an_object_to_the_room_and_refuses_equipped_or_missing():
    e = make_world()
    assert e.execute("knight", "drop apple").ok and where(e, "apple") == "hall"
    assert e.check("knight", "drop cloak") == "you are wearing the cloak; remove it first"
    assert e.check("knight", "drop shovel") == "you are not carrying the shovel"


def test_give_moves_an_object_to_another_agent():
    e = make_world()
    assert "give apple to thief" in e.valid_actions("knight")
    assert e.execute("knight", "give apple to thief").ok and where(e, "apple") == "thief"
    assert e.check("knight", "give ale to knight") == "you cannot give things to yourself"
    assert e.check("knight", "give ale to box") == "you can only give things to someone"
    assert e.check("knight", "give shovel to thief") == "you are not carrying the shovel"


def test_steal_takes_an_unequipped_object_from_another_agent():
    e = make_world()
    valid = e.valid_actions("knight")
    assert "steal shovel from thief" in valid and "steal dagger from thief" not in valid
    assert e.execute("knight", "steal shovel from thief").ok and where(e, "shovel") == "knight"
    assert e.check("knight", "steal dagger from thief") == "the thief is wielding the dagger"
    assert e.check("knight", "steal apple from thief") == "the thief does not have the apple"
    assert e.check("knight", "steal apple from knight") == "you cannot steal from yourself"


def test_wear_and_wield_equip_and_add_stats():
    e = make_world()
    knight = e.agent("knight")
    assert (knight.attack, knight.defense) == (0, 1)  # starts wearing the cloak
    e.execute("knight", "get sword")
    assert "wield sword" in e.valid_actions("knight")
    assert e.execute("knight", "wield sword").ok and knight.attack == 1
    assert e.graph.resolve("sword").equipped == "wield"
    assert e.inventory("knight")[2] == ["a sword"] and e.inventory("knight")[1] == ["a cloak"]
    assert e.check("knight", "wield sword") == "you are already wielding the sword"
    assert e.check("knight", "wear apple") == "you cannot wear the apple"
    assert e.check("knight", "wield apple") == "you cannot wield the apple"
    assert e.check("knight", "wear cloak") == "you are already wearing the cloak"


def test_remove_unequips_and_reverts_stats():
    e = make_world()
    assert e.execute("knight", "remove cloak").ok
    assert e.agent("knight").defense == 0 and e.graph.resolve("cloak").equipped is None
    assert e.check("knight", "remove cloak") == "you are not wearing or wielding the cloak"
    assert e.check("knight", "remove sword") == "you are not carrying the sword"
    assert "wear cloak" in e.valid_actions("knight")


def test_eat_and_drink_consume_the_object():
    e = make_world()
    assert e.execute("knight", "eat apple").ok and not e.graph.has_name("apple")
    assert e.execute("knight", "drink ale").ok and not e.graph.has_name("ale")
    e2 = make_world()
    assert e2.check("knight", "eat ale") == "you cannot eat the ale"
    assert e2.check("knight", "drink apple") == "you cannot drink the apple"
    assert e2.check("knight", "eat cloak") == "you are wearing the cloak; remove it first"


def test_hit_damages_and_can_kill():
    e = make_world()
    assert e.check("knight", "hit knight") == "you cannot hit yourself"
    assert e.check("knight", "hit box") == "you can only hit someone"
    thief = e.agent("thief")
    for _ in range(200):
        if thief.dead:
            break
        assert e.execute("knight", "hit thief").ok
    assert thief.dead and thief.health <= 0
    assert {where(e, n) for n in ("shovel", "dagger", "coin")} == {"hall"}  # belongings fall
    assert e.graph.resolve("dagger").equipped is None
    assert e.check("knight", "hit thief") == "the thief is dead"
    assert e.valid_actions("thief") == [] and e.check("thief", "smile") == "you are dead"


def test_hit_is_reproducible_from_the_engine_seed():
    healths = []
    for _ in range(2):
        e = make_world()
        for _ in range(3):
            e.execute("knight", "hit thief")
        healths.append(e.agent("thief").health)
    assert healths[0] == healths[1]


def test_hug_is_a_message_only():
    e = make_world()
    result = e.execute("knight", "hug thief")
    assert result.ok and result.message == "You hug the thief." and result.broadcast == "The knight hugs the thief."
    assert e.check("knight", "hug knight") == "you cannot hug yourself"


def test_emotes_are_messages():
    e = make_world()
    assert len(EMOTE_THIRD_PERSON) == 22
    for verb, third in EMOTE_THIRD_PERSON.items():
        result = e.execute("knight", verb)
        assert result.ok and result.kind == "emote" and result.broadcast == f"The knight {third}."
    assert e.execute("knight", "gesture smile").command == "smile"
    bad = e.emote("knight", "cringe")
    assert not bad.ok and "not an emote" in bad.reason


def test_invalid_commands_never_crash_and_say_why():
    e = make_world()
    for text in ("", "   ", "fly", "get", "get ", "put", "put sword", "give apple to", "steal from thief",
                 "hit", "get the moon", "wear", "eat eat eat", "put in in in", "drop \t", "GET SWORD"):
        result = e.execute("knight", text)
        assert isinstance(result.reason, str)
        assert result.ok or result.reason
    assert e.execute("knight", "fly").reason.startswith("'fly' is not something you can do here")
    assert e.execute("knight", "drop shovel").message == "You can't do that: you are not carrying the shovel."
    with pytest.raises(KeyError, match="no agent named"):
        e.valid_actions("dragon")


def test_names_with_spaces_and_prepositions_parse():
    g = GameGraph()
    room = g.add_room("kitchen")
    g.add_agent("cook", room.id)
    g.add_object("bread in a basket", "cook", "Bread.", frozenset({"food"}))
    g.add_object("box of tin", room.id, "A box.", frozenset({"container"}))
    e = Engine(g)
    assert "put bread in a basket in box of tin" in e.valid_actions("cook")
    assert e.execute("cook", "put bread in a basket in box of tin").ok


def test_valid_actions_are_exactly_the_commands_that_pass_their_checks():
    """Brute force over every verb and every 1- and 2-argument combination of names."""
    rng = random.Random(0)
    for step in range(6):
        e = make_world()
        for _ in range(step):  # a few random moves to vary the state
            choice = rng.choice(e.valid_actions("knight"))
            e.execute("knight", choice)
        names = [n.name for n in e.graph.nodes.values() if n.kind != "room"]
        brute = set()
        for verb in actions.VERBS:
            words = actions.PREPOSITIONS.get(verb, ())
            combos = [f"{verb} {a}" for a in names] + [
                f"{verb} {a} {w} {b}" for a, b in itertools.permutations(names, 2) for w in words]
            for text in combos:
                result_reason = e.check("knight", text)
                if result_reason is None:
                    parsed = actions.parse(e.graph, text)
                    brute.add(actions.canonical(e.graph, parsed))
        assert brute == set(e.valid_actions("knight"))
        assert e.valid_actions("knight") == sorted(e.valid_actions("knight"))


# ------------------------------------------------------------------------------------ scene
def test_stage_chat_places_two_players_with_unique_names():
    world = authored_world()
    rng = random.Random(5)
    pool = sorted(world.characters)
    for room_id in world.room_ids()[:10]:
        scene = stage_chat(world, room_id, rng, pool)
        names = [p.name for p in scene.players]
        assert len(set(names)) == 2 and all(n == n.lower() for n in names)
        graph = scene.graph
        for node in graph.nodes.values():
            if node.is_object:
                assert graph.parent(node).kind in ("room", "agent")  # nothing starts in a container
        if scene.npc is not None:
            assert graph.resolve(scene.npc).contents == []
        assert all(scene.descriptions[n.name] for n in graph.nodes.values() if n.is_object)


def test_authored_world_json_is_plain_data():
    path = REPO / "zoo" / "light" / "authored_world.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert set(raw) >= {"categories", "rooms", "characters", "objects"}
