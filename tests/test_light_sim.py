"""LIGHT-sim: official schema, engine-valid replays, determinism, layouts, loader, stats, CLI."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tests.conftest import LIGHT_DATA
from zoo.cli import main
from zoo.light.candidates import EMOTES
from zoo.light.environment import authored_world, load_world
from zoo.light.examples import build_examples
from zoo.light.records import Agent, Episode, Setting, Turn, parse_episodes
from zoo.light.release import load_episodes, split_light_data
from zoo.light.replay import replay_episode, strip_article
from zoo.light.safe_pickle import load_pickle
from zoo.light.sim import (
    SimConfig,
    generate_corpus,
    generate_split,
    load_sim_corpus,
    release_order,
    write_corpus,
)
from zoo.light.sim.speech import address, lower_first, sentences, span
from zoo.light.stats import PAPER_TABLE1, corpus_stats, format_comparison, format_table
from zoo.light.world import UNSEEN_CATEGORIES

REPO = Path(__file__).resolve().parents[1]
LIGHT = LIGHT_DATA
TINY = SimConfig.preset("tiny", world="authored")


@pytest.fixture(scope="module")
def world():
    return authored_world()


@pytest.fixture(scope="module")
def corpus(world):
    return generate_corpus(TINY, world)


def test_default_sizes_are_the_papers_table_1():
    config = SimConfig()
    assert config.sizes() == {"train": 8538, "valid": 500, "test": 1000, "test_unseen": 739}
    assert config.release_layout and not TINY.release_layout


def test_sizes_splits_and_unseen_categories(corpus):
    assert {k: len(v) for k, v in corpus.items()} == TINY.sizes()
    for split, episodes in corpus.items():
        for episode in episodes:
            assert (episode.setting.category in UNSEEN_CATEGORIES) == (split == "test_unseen")


def test_episodes_are_in_the_official_schema(corpus):
    for episodes in corpus.values():
        raw = [e.to_raw() for e in episodes]
        assert parse_episodes(raw) == episodes
        for episode in raw:
            assert set(episode) >= {"setting", "agents", "speech", "action", "emote", "all_descriptions",
                                    "available_actions", "room_objects", "carrying", "wearing", "wielding"}
            assert set(episode["setting"]) == {"name", "category", "description", "background"}


def test_every_turn_is_well_formed(corpus):
    for episodes in corpus.values():
        for episode in episodes:
            assert 1 <= len(episode.turns) <= TINY.max_turns
            for t, turn in enumerate(episode.turns):
                assert turn.speech and turn.character == episode.agents[t % 2].name
                assert turn.action is None or turn.emote is None
                assert turn.emote is None or turn.emote in EMOTES
                assert turn.action is None or turn.action in turn.available_actions
                assert list(turn.available_actions) == sorted(turn.available_actions)
                for name in turn.room_objects + turn.inventory:
                    assert name in episode.descriptions  # every object string is described


def test_every_episode_replays_through_the_engine(corpus, world):
    for episodes in corpus.values():
        for episode in episodes:
            assert replay_episode(episode, world) == []
            assert replay_episode(episode) == []  # classes inferred from the record alone


@pytest.mark.skipif(not (LIGHT / "environment-full").is_dir(), reason="LIGHT environment files not found")
def test_real_world_episodes_replay_and_quote_real_text():
    world = load_world(LIGHT)
    config = SimConfig.preset("tiny")
    episodes = generate_split(world, "valid", 12, config, lambda i: True) + \
        generate_split(world, "test_unseen", 8, config)
    for index, episode in enumerate(episodes):
        assert replay_episode(episode) == []
        assert index >= 12 or any(turn.action for turn in episode.turns)
    persona_sentences = {s for e in episodes for a in e.agents for s in sentences(a.persona)}
    spoken = " ".join(t.speech for e in episodes for t in e.turns)
    assert any(s.rstrip(".") in spoken for s in persona_sentences)


def test_generation_is_deterministic_and_seeded(world):
    first = generate_split(world, "train", 6, TINY)
    assert first == generate_split(world, "train", 6, TINY)
    other = generate_split(world, "train", 6, SimConfig.preset("tiny", seed=1, world="authored"))
    assert [e.to_raw() for e in first] != [e.to_raw() for e in other]


def test_valid_and_test_chats_contain_an_action(corpus):
    for split in ("valid", "test"):
        assert all(any(t.action for t in e.turns) for e in corpus[split])


def test_speech_is_grounded_in_persona_setting_and_objects(corpus):
    """Each kind of context reappears in the speech of the chats it belongs to."""
    episodes = corpus["train"]
    persona = setting = objects = 0
    for episode in episodes:
        speech = " ".join(t.speech.lower() for t in episode.turns)
        persona += any(s.lower().rstrip(".")[:25] in speech for a in episode.agents for s in sentences(a.persona))
        setting += any(s.lower().rstrip(".")[:25] in speech for s in sentences(episode.setting.description))
        objects += any(strip_article(o.name).lower() in speech for o in episode.objects)
    assert persona > len(episodes) / 2 and setting > len(episodes) / 4 and objects > len(episodes) / 2


def test_written_corpus_reads_back_through_the_official_loader(corpus, world, tmp_path):
    directory = write_corpus(corpus, tmp_path / "sim", TINY, world)
    manifest = json.loads((directory / "sim_manifest.json").read_text())
    assert manifest["label"] == "LIGHT-sim" and manifest["layout"] == "splits"
    assert load_sim_corpus(directory) == corpus
    test = load_episodes(directory / "light_sim_test.pkl", verify=False)
    assert test == corpus["test"]
    assert isinstance(load_pickle(directory / "light_sim_test.pkl")[0], dict)  # plain data only
    examples = build_examples(test, "action")
    assert examples and all(e.label in e.candidates for e in examples)


def tiny_episode(tag: str) -> Episode:
    return Episode(Setting(tag, "Tavern", "d"), (Agent("a", "p"), Agent("b", "q")), (Turn(speech=tag),))


def test_release_layout_lets_parlais_split_rule_recover_the_splits():
    splits = {"train": [tiny_episode(f"train {i}") for i in range(3300)],
              "valid": [tiny_episode(f"valid {i}") for i in range(500)],
              "test": [tiny_episode(f"test {i}") for i in range(1000)]}
    recovered = split_light_data(release_order(splits))
    assert recovered == splits


def test_speech_helpers():
    assert sentences("One two three. Four five six! Seven") == ["One two three.", "Four five six!"]
    assert lower_first("The cave.") == "the cave." and lower_first("I am.") == "I am."
    assert address("a wild boar") == "wild boar" and address("king") == "king"
    rng = random.Random(0)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    cut = span(" ".join(words) + ".", rng).split()
    assert 5 <= len(cut) <= 12 and " ".join(cut) in " ".join(words)


def test_table_1_statistics(corpus):
    stats = corpus_stats(corpus)
    assert list(stats) == ["train", "valid", "test", "test_unseen"]
    for split, column in stats.items():
        episodes = corpus[split]
        assert column.dialogues == len(episodes)
        assert column.utterances == sum(len(e.turns) for e in episodes)
        assert column.actions == sum(t.action is not None for e in episodes for t in e.turns)
        assert column.utterance_length > 3 and column.vocabulary > 50
    table = format_table(stats, "LIGHT-sim")
    assert "| Dialogues |" in table and "Test unseen" in table
    comparison = format_comparison(stats)
    assert f"{PAPER_TABLE1['train']['utterances']:,}" in comparison


def test_sim_and_stats_commands(tmp_path, capsys):
    out = tmp_path / "corpus"
    assert main(["light", "sim", "--out", str(out), "--preset", "tiny", "--world", "authored", "--json"]) == 0
    manifest = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert manifest["dialogues"] == TINY.sizes() and manifest["generate_seconds"] >= 0
    assert main(["light", "stats", "--source", "sim", "--sim-dir", str(out), "--json"]) == 0
    printed = capsys.readouterr().out
    stats = json.loads(printed.strip().splitlines()[-1])
    assert stats["data"] == "LIGHT-sim" and stats["splits"]["test_unseen"]["dialogues"] == TINY.test_unseen
    assert "LIGHT-sim / paper" in printed
    assert main(["light", "examples", "--pickle", str(out / "light_sim_valid.pkl"), "--no-verify", "--split", "all",
                 "--task", "emote", "--jsonl", "--limit", "2"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 and json.loads(lines[0])["label"] in EMOTES
    assert main(["light", "sim", "--out", str(tmp_path / "x"), "--world", "official", "--data-dir", str(tmp_path)]) == 2


def test_concurrent_processes_on_a_cold_cache_build_the_corpus_once(tmp_path):
    """Two DDP-like processes ask for the same uncached corpus at once: one generates it,
    the other waits for it; both get the same finished directory."""
    import subprocess
    import sys

    code = ("import sys, logging; logging.basicConfig(level=logging.WARNING); "
            "from zoo.light.sim import SimConfig, ensure_sim_corpus; "
            "print(ensure_sim_corpus(SimConfig.preset('tiny', world='authored'), root=sys.argv[1]))")
    processes = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=600) for p in processes]
    assert all(p.returncode == 0 for p in processes), outputs
    directories = {out.strip() for out, _ in outputs}
    assert len(directories) == 1
    generations = sum("generating" in err for _, err in outputs)
    assert generations == 1
    corpus = Path(directories.pop())
    assert (corpus / "sim_manifest.json").is_file()
    assert [p.name for p in corpus.parent.iterdir() if p.is_dir()] == [corpus.name]  # no half-built sibling
