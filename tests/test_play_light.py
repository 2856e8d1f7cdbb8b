"""``zoo play light --script ... --transcript ...``: a scripted game on the authored world, read back.

The partner is the released models (light-bi-ranker retrieving from a tiny LIGHT-sim corpus's
first 200 training utterances, light-memnet emoting); no LIGHT data is visible, so the
authored world shipped with zoo stages the room.
"""

import json
import logging
import re

import pytest

from zoo.cli import main
from zoo.light.candidates import EMOTES
from zoo.light.environment import authored_world
from zoo.play.light_partner import Partner, content_words, safe_actions
from zoo.play.light_room import stage_room

GAME = ["--room", "Village graveyard", "--as", "gravedigger", "--partner", "priest", "--seed", "3"]
SCRIPT = """\
# a comment line, skipped
Good evening, father. The dead are restless tonight.
/do get skull
/do get gravestone
/emote shrug

/dance
""" + "very " * 200 + """long line
Caf\u00e9 \u202eevil\u202c \U0001F600 with a zero\u200bwidth space
/quit
never read: the game ended at /quit
"""


@pytest.fixture
def no_light_data(tmp_path, monkeypatch, play_cache):
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path / "no-data"))
    monkeypatch.setenv("ZOO_CACHE", str(play_cache))


def play(tmp_path, play_corpus, *extra, script=SCRIPT, name="game"):
    script_path = tmp_path / f"{name}.txt"
    script_path.write_text(script, encoding="utf-8")
    transcript = tmp_path / f"{name}.jsonl"
    code = main(["play", "light", *GAME, "--corpus", str(play_corpus), "--index-limit", "200",
                 "--script", str(script_path), "--transcript", str(transcript), *extra])
    assert code == 0
    return [json.loads(line) for line in transcript.read_text(encoding="utf-8").splitlines()]


@pytest.mark.slow
def test_a_scripted_game_is_recorded_turn_by_turn(tmp_path, play_corpus, no_light_data, capsys):
    from zoo.play.retrieval_index import UtteranceCorpus

    records = play(tmp_path, play_corpus)
    screen = capsys.readouterr().out
    start, turns = records[0], records[1:]
    assert start["kind"] == "start" and start["world"] == "authored"
    assert (start["room"], start["you"], start["partner"]) == ("Village graveyard", "gravedigger", "priest")
    assert start["persona"].startswith("I dig graves for the living to fill.")
    assert start["index"]["utterances"] == 200 and start["index"]["corpus"] == "LIGHT-sim"

    mine = [r for r in turns if r["speaker"] == "gravedigger"]
    assert [(r["kind"], r["text"]) for r in mine] == [
        ("say", "Good evening, father. The dead are restless tonight."),
        ("act", "get skull"),
        ("refused", "get gravestone"),
        ("emote", "shrug"),
        ("say", ("very " * 200 + "long line")[:500].rstrip()),      # cut to 500 characters
        ("say", "Caf\u00e9 evil \U0001F600 with a zero width space"),  # bidi and zero-width removed
    ]
    assert mine[1]["changes"] == ["the skull: here -> carried by the gravedigger (you)"]
    assert mine[2]["reason"] == "the gravestone cannot be picked up"  # the engine's own words
    assert "You can't do that: the gravestone cannot be picked up." in screen
    assert "(unknown command /dance; /help lists them)" in screen
    assert "(say something, or /help for commands)" in screen
    assert "never read" not in screen

    # Every turn that happened (not the refusal) got a partner turn: say, act, emote.
    partner = [r for r in turns if r["speaker"] == "priest"]
    assert [r["kind"] for r in partner] == ["say", "act", "emote"] * 5
    said = [r["text"] for r in partner if r["kind"] == "say"]
    corpus = UtteranceCorpus.open(play_corpus).training_utterances(200)
    assert all(text in corpus for text in said)                    # retrieved from the index ...
    assert len(set(said)) == len(said)                             # ... never the same line twice
    assert all(r["text"] in EMOTES for r in partner if r["kind"] == "emote")
    assert all(r["seconds"] > 0 for r in partner)
    for act in (r for r in partner if r["kind"] == "act"):
        assert act["why"] and (act["text"] is not None or act["changes"] == [])  # no action, no change


@pytest.mark.slow
def test_the_same_script_and_seed_replay_the_same_game(tmp_path, play_corpus, no_light_data):
    def without_time(records):
        return [{k: v for k, v in r.items() if k not in ("seconds", "index", "load_seconds")} for r in records]

    first = play(tmp_path, play_corpus, name="first")
    again = play(tmp_path, play_corpus, name="again")
    assert without_time(first) == without_time(again)


def test_with_act_always_the_partner_changes_the_world_each_turn(tmp_path, play_corpus, no_light_data):
    records = play(tmp_path, play_corpus, "--act", "always", script="Hello.\nHow are you?\n/quit\n")
    room = stage_room(authored_world(), "Village graveyard", "gravedigger", "priest", seed=3)
    acts = [r for r in records if r["speaker"] == "priest" and r["kind"] == "act"]
    assert len(acts) == 2
    assert acts[0]["text"] in safe_actions(room)     # an engine-valid action, executed
    assert all(r["text"] and r["why"] == "best-ranked valid action" for r in acts)


def test_with_act_never_the_partner_only_talks_and_emotes(tmp_path, play_corpus, no_light_data):
    records = play(tmp_path, play_corpus, "--act", "never", script="Give me the holy water, father.\n/quit\n")
    act = next(r for r in records if r["speaker"] == "priest" and r["kind"] == "act")
    assert act["text"] is None and act["changes"] == [] and "--act never" in act["why"]


def test_the_partner_acts_only_on_what_was_just_mentioned():
    room = stage_room(authored_world(), "Village graveyard", "gravedigger", "priest", seed=3)
    asked = content_words("Father, could you give me your holy water?")
    assert Partner.mentioned(room, "give holy water to gravedigger", asked)
    assert Partner.mentioned(room, "drink holy water", asked)
    assert not Partner.mentioned(room, "get skull", asked)
    assert not Partner.mentioned(room, "hug gravedigger", asked)
    assert Partner.mentioned(room, "hug gravedigger", content_words("Hug me, father."))
    assert Partner.mentioned(room, "get skull", content_words("Look at those skulls!"))  # plurals count
    assert not Partner.mentioned(room, "get skull", content_words("Good evening."))


@pytest.mark.parametrize("flag, value, message", [
    ("--room", "Moon base", "no room named 'Moon base' in the authored world"),
    ("--room", "the", "matches"),
    ("--as", "dragon king", "no playable character named 'dragon king'"),
    ("--script", "/no/such/script.txt", "script '/no/such/script.txt' is not a file or a pipe"),
])
def test_bad_arguments_end_in_one_clear_line(flag, value, message, no_light_data, capsys):
    with pytest.raises(SystemExit) as exit:
        main(["play", "light", "--world", "authored", flag, value])
    assert exit.value.code == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("zoo: error: ") and message in error and "\n" not in error


def test_a_generative_model_writes_the_partners_lines(tmp_path, play_corpus, no_light_data):
    from dataclasses import replace

    from zoo.light.examples import build_examples
    from zoo.light.sim import load_sim_corpus
    from zoo.models.generative import GenerativeTransformer
    from zoo.play.light_partner import partner_context

    model = GenerativeTransformer(vocabulary_size=300, d_model=32, layers=1, heads=2, ffn_dim=64,
                                  max_new_tokens=8, beam_size=1)
    train = load_sim_corpus(play_corpus)["train"]
    model.setup_from_data(type("Split", (), {"examples": build_examples(train, "dialogue")})())
    model.save_pretrained(tmp_path / "generative")
    line = "Good evening, father."
    records = play(tmp_path, play_corpus, "--model", str(tmp_path / "generative"), script=f"{line}\n/quit\n")
    assert "index" not in records[0]                               # nothing retrieved
    said = next(r["text"] for r in records if r["speaker"] == "priest" and r["kind"] == "say")

    room = stage_room(authored_world(), "Village graveyard", "gravedigger", "priest", seed=3)
    room.turns.append(room.record_turn(room.me, speech=line))
    context = partner_context(room, "speech", replace(room.record_turn(room.partner), speech=""))
    assert said == (model.generate([context])[0].strip() or "...")  # the model's own line for this game


def test_a_registered_model_without_weights_is_named_as_such(no_light_data, capsys):
    with pytest.raises(SystemExit):
        main(["play", "light", "--world", "authored", "--model", "light-fasttext", "--script", __file__])
    assert "light-fasttext is a registered model without released weights" in capsys.readouterr().err


def test_room_text_names_and_the_partners_lines_are_shown_with_control_characters_escaped(
        tmp_path, no_light_data, monkeypatch, capsys):
    """What the world data, the corpus and the command line put on screen is escaped: an ESC
    or BEL there (title, clear screen, clipboard) is shown as text, never sent to the terminal."""
    from dataclasses import replace
    from types import SimpleNamespace

    from zoo.light import environment
    from zoo.play import light_partner

    world = authored_world()
    room_id = next(key for key, room in world.rooms.items() if room.name == "Village graveyard")
    world.rooms[room_id] = replace(world.rooms[room_id], description="Graves\x1b]0;title\x07 and \x1b[2J mist.")
    turn = SimpleNamespace(say="Peace\x1b]52;c;SGVsbG8=\x07 be with you.", action=None, why="", changes=[],
                           emote=SimpleNamespace(ok=False, command=None), seconds={"say": 0, "act": 0, "emote": 0})
    partner = SimpleNamespace(take_turn=lambda room: turn)
    monkeypatch.setattr(environment, "load_world", lambda data_dir, source: world)
    monkeypatch.setattr(light_partner, "load_partner",
                        lambda *args, **kwargs: (partner, {"partner_model": "my\x1b[2Jmodel"}))
    script = tmp_path / "script.txt"
    script.write_text("Good evening.\n/look\n/quit\n")

    assert main(["play", "light", *GAME, "--script", str(script)]) == 0

    screen = capsys.readouterr().out
    assert "\x1b" not in screen and "\x07" not in screen
    assert "Graves\\x1b]0;title\\x07 and \\x1b[2J mist." in screen
    assert 'priest: "Peace\\x1b]52;c;SGVsbG8=\\x07 be with you."' in screen
    assert "played by my\\x1b[2Jmodel" in screen


def a_partner_with_one_line(monkeypatch):
    """``zoo play light`` with a partner that answers every line the same way: the room and the
    screen without the models' time."""
    from types import SimpleNamespace

    from zoo.play import light_partner

    turn = SimpleNamespace(say="Peace be with you.", action=None, why="", changes=[],
                           emote=SimpleNamespace(ok=False, command=None), seconds={"say": 0, "act": 0, "emote": 0})
    partner = SimpleNamespace(take_turn=lambda room: turn)
    monkeypatch.setattr(light_partner, "load_partner", lambda *args, **kwargs: (partner, {"partner_model": "a stub"}))
    return partner


ROOM_SEED = re.compile(r"^room seed (\d+): rerun with --seed \1 for this room$", re.MULTILINE)


def test_without_a_seed_each_game_draws_a_fresh_room_and_prints_the_seed_that_replays_it(
        tmp_path, no_light_data, monkeypatch, capsys):
    a_partner_with_one_line(monkeypatch)
    script = tmp_path / "script.txt"
    script.write_text("/quit\n")
    seeds = []
    for _ in range(3):
        assert main(["play", "light", "--world", "authored", "--script", str(script)]) == 0
        screen = capsys.readouterr().out
        seed = int(ROOM_SEED.search(screen).group(1))
        assert stage_room(authored_world(), "random", seed=seed).panel() in screen  # the room that seed stages
        seeds.append(seed)
    assert len(set(seeds)) > 1  # three equal draws of a million seeds: one chance in 10^12

    assert main(["play", "light", "--world", "authored", "--seed", str(seeds[0]), "--script", str(script)]) == 0
    replayed = capsys.readouterr().out
    assert stage_room(authored_world(), "random", seed=seeds[0]).panel() in replayed
    assert not ROOM_SEED.search(replayed)


def test_an_explicit_seed_stages_the_room_it_always_did(tmp_path, no_light_data, monkeypatch, capsys):
    a_partner_with_one_line(monkeypatch)
    script = tmp_path / "script.txt"
    script.write_text("/quit\n")
    for seed in ("0", "2"):
        assert main(["play", "light", "--world", "authored", "--seed", seed, "--script", str(script)]) == 0
        screen = capsys.readouterr().out
        assert screen.startswith(stage_room(authored_world(), "random", seed=int(seed)).panel())
        assert "room seed" not in screen


def test_a_missing_light_world_is_noted_once_however_often_a_command_loads_it(
        tmp_path, monkeypatch, caplog, capsys):
    """``zoo play light`` loads the world for the game and again for the LIGHT-sim corpus it
    retrieves from; with no LIGHT world in $ZOO_DATA_DIR, the authored one stands in, said once."""
    from zoo.light import environment
    from zoo.light.sim import SimConfig
    from zoo.light.sim.store import sim_corpus_dir
    from zoo.play import light_partner

    monkeypatch.setattr(environment, "_noted_roots", set())  # as in a new process
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path))        # an empty folder
    partner = a_partner_with_one_line(monkeypatch)

    def load_partner(*args, **kwargs):
        sim_corpus_dir(SimConfig())  # where the corpus to retrieve from lies: it loads the world again
        return partner, {"partner_model": "a stub"}

    monkeypatch.setattr(light_partner, "load_partner", load_partner)
    script = tmp_path / "script.txt"
    script.write_text("Good evening.\n/quit\n")
    with caplog.at_level(logging.INFO, logger="zoo.light.environment"):
        assert main(["play", "light", "--seed", "1", "--script", str(script)]) == 0
        assert environment.load_world().source == "authored"
    notes = [record for record in caplog.records if "no LIGHT environment found" in record.getMessage()]
    assert [(note.levelname, note.getMessage()) for note in notes] == [
        ("WARNING", "no LIGHT environment found (no folder $ZOO_DATA_DIR/light); using the small authored world "
                    "shipped with zoo")]
