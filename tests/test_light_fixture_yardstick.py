"""The real-LIGHT fixture yardstick: real labels only, honest candidate lists, intervals, CLI."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter

import numpy as np
import pytest
import torch

from tests.conftest import LIGHT_DATA
from zoo.bootstrap_intervals import Bootstrap
from zoo.cli import main
from zoo.light.evaluate import evaluate_ranker, example_outcomes
from zoo.light.examples import build_examples, full_contexts
from zoo.light.fixture import LABEL, load_fixture, parse_real_personas, parse_real_turns
from zoo.light.fixture_yardstick import FixtureDistractors, yardstick_dataset
from zoo.light.metrics import MeanReciprocalRank, RecallAtK
from zoo.light.records import LightDataError

FIXTURE_DIR = LIGHT_DATA / "fixture"
pytestmark = pytest.mark.skipif(not (FIXTURE_DIR / "light_data_fixture.pkl").is_file(),
                                reason=f"LIGHT fixture not found under {FIXTURE_DIR}")


@pytest.fixture(scope="module")
def fixture():
    return load_fixture(LIGHT_DATA)


@pytest.fixture(scope="module")
def meta():
    return json.loads((FIXTURE_DIR / "light_data_fixture_meta.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def dialogue(fixture):
    return yardstick_dataset(fixture, "dialogue")


def real_range(entry: dict, field: str) -> range:
    """The meta's ``field[a..b]`` entry read independently of zoo.light.fixture."""
    for text in entry["real_fields"]:
        match = re.fullmatch(rf"{field}\[(\d+)\.\.(\d+)\]", text)
        if match:
            return range(int(match.group(1)), int(match.group(2)) + 1)
    return range(0)


class PerfectScorer:
    """Knows every context's gold: scores it 1, everything else 0."""

    def __init__(self, dataset):
        self.gold = {dataset[i].context: dataset[i].example.label for i in range(len(dataset))}

    def score(self, contexts, candidates):
        return torch.tensor([[float(c == self.gold[x]) for c in cands] for x, cands in zip(contexts, candidates)])


class ConstantScorer:
    def score(self, contexts, candidates):
        return torch.zeros(len(contexts), max(len(c) for c in candidates))


# -- which examples -----------------------------------------------------------------------------------


def test_every_real_utterance_is_a_label_exactly_once(fixture, meta, dialogue):
    real = Counter(episode.turns[t].speech for episode, entry in zip(fixture.episodes, meta)
                   for t in real_range(entry, "speech"))
    assert len(dialogue) == sum(real.values()) == 86
    assert Counter(e.label for e in dialogue.examples) == real


def test_actions_and_emotes_only_where_the_meta_says_they_are_real(fixture, meta):
    for task, field in (("action", "action"), ("emote", "emote")):
        dataset = yardstick_dataset(fixture, task)
        expected = [(index, t) for index, (episode, entry) in enumerate(zip(fixture.episodes, meta))
                    for t in real_range(entry, field) if getattr(episode.turns[t], field) is not None]
        assert sorted((e.episode, e.turn) for e in dataset.examples) == expected
        assert all(e.label == getattr(fixture.episodes[e.episode].turns[e.turn], field) for e in dataset.examples)
    midi = [i for i, entry in enumerate(meta) if entry["source"] == "midi_tuning_dummy_data"]
    assert midi and not any(e.episode in midi for e in yardstick_dataset(fixture, "action").examples)
    assert len(yardstick_dataset(fixture, "emote")[0].candidates) == 22


def test_contexts_and_texts_are_the_ones_models_see_on_any_corpus(fixture, dialogue):
    shared = build_examples(list(fixture.episodes), "dialogue")
    assert dialogue.contexts == full_contexts(shared)
    assert [(e.text, e.label, e.self_agent, e.turn) for e in dialogue.examples] == [
        (e.text, e.label, e.self_agent, e.turn) for e in shared]
    no_persona = yardstick_dataset(fixture, "dialogue", "no_persona")
    assert not any("_self_persona" in c for c in no_persona.contexts)
    assert any("_self_persona" in c for c in dialogue.contexts)


# -- candidates ---------------------------------------------------------------------------------------


def test_lists_hold_the_gold_once_and_19_distinct_real_utterances_of_other_episodes(fixture, meta, dialogue):
    by_episode = [{episode.turns[t].speech for t in real_range(entry, "speech")}
                  for episode, entry in zip(fixture.episodes, meta)]
    slots = Counter()
    for item in (dialogue[i] for i in range(len(dialogue))):
        candidates, gold = item.candidates, item.example.label
        assert len(candidates) == 20 and len(set(candidates)) == 20
        assert candidates.count(gold) == 1 and candidates[item.label] == gold
        others = set().union(*(u for e, u in enumerate(by_episode) if e != item.example.episode))
        assert set(candidates) - {gold} <= others
        slots[item.label] += 1
    assert len(slots) > 10  # the gold's slot is drawn, not fixed


def test_candidates_are_deterministic_for_a_seed_and_change_with_it(fixture, dialogue):
    again = yardstick_dataset(fixture, "dialogue", seed=42)
    other = yardstick_dataset(fixture, "dialogue", seed=7)
    assert [e.candidates for e in again.examples] == [e.candidates for e in dialogue.examples]
    assert [e.candidates for e in other.examples] != [e.candidates for e in dialogue.examples]


def test_a_pool_too_small_for_a_full_list_is_an_error(fixture):
    with pytest.raises(ValueError, match="distractors needed"):
        FixtureDistractors(fixture, num_candidates=1000)("hello", 0, 0)
    with pytest.raises(ValueError, match="unknown distractor pool"):
        FixtureDistractors(fixture, pool="nearby")


def test_the_other_pools_add_this_dialogues_lines_as_documented(fixture, dialogue):
    def own_turns(dataset):
        """Per example: the turns of its own episode that its distractors come from."""
        turns = []
        for example in dataset.examples:
            lines = {fixture.episodes[example.episode].turns[t].speech: t
                     for t in fixture.real_turns[example.episode]["speech"]}
            turns.append([lines[c] for c in example.candidates if c != example.label and c in lines])
        return turns

    assert not any(own_turns(dialogue))
    unsaid = own_turns(yardstick_dataset(fixture, "dialogue", distractors="unsaid"))
    assert any(unsaid) and all(t > e.turn for ts, e in zip(unsaid, dialogue.examples) for t in ts)
    every = own_turns(yardstick_dataset(fixture, "dialogue", distractors="all"))
    assert any(t < e.turn for ts, e in zip(every, dialogue.examples) for t in ts)


# -- scores and intervals -------------------------------------------------------------------------------


def test_perfect_scorer_gets_one_and_constant_scorer_gets_chance(dialogue):
    perfect = evaluate_ranker(PerfectScorer(dialogue), dialogue, "dialogue", bootstrap=Bootstrap())
    assert perfect["r_at_1"] == 1.0 and perfect["mrr"] == 1.0 and perfect["ci95"]["r_at_1"] == [1.0, 1.0]
    constant = evaluate_ranker(ConstantScorer(), dialogue, "dialogue", bootstrap=Bootstrap())
    assert constant["r_at_1"] == pytest.approx(1 / 20) and constant["n"] == 86
    assert constant["mrr"] == pytest.approx(1 / 10.5)


def test_per_example_outcomes_match_the_streaming_metrics(dialogue):
    generator = torch.Generator().manual_seed(3)
    scores = torch.randint(0, 4, (len(dialogue), 20), generator=generator).float()  # many ties
    rows = {dialogue[i].context: scores[i] for i in range(len(dialogue))}

    class Fixed:
        def score(self, contexts, candidates):
            return torch.stack([rows[c] for c in contexts])

    outcomes = example_outcomes(Fixed(), dialogue, batch_size=32)
    target = torch.tensor([dialogue[i].label for i in range(len(dialogue))])
    recall, mrr = RecallAtK(1), MeanReciprocalRank()
    recall.update(scores, target)
    mrr.update(scores, target)
    assert float(outcomes["hit"].mean()) == pytest.approx(float(recall.compute()))
    assert float(outcomes["rr"].mean()) == pytest.approx(float(mrr.compute()))


def test_interval_contains_the_estimate_narrows_with_n_and_is_reproducible():
    rng = np.random.default_rng(1)
    bootstrap = Bootstrap(resamples=1000, seed=0)
    widths = []
    for n in (20, 200, 2000):
        hits = (rng.random(n) < 0.3).astype(float)
        low, high = bootstrap.interval(hits)
        assert low <= hits.mean() <= high
        widths.append(high - low)
        assert bootstrap.interval(hits) == (low, high)
    assert widths[0] > widths[1] > widths[2] > 0
    assert widths[0] / widths[2] == pytest.approx(10, rel=0.35)  # ~ 1 / sqrt(n)


def test_bootstrap_rejects_meaningless_settings():
    with pytest.raises(ValueError):
        Bootstrap(resamples=0)
    with pytest.raises(ValueError):
        Bootstrap(level=1.0)
    with pytest.raises(ValueError):
        Bootstrap().interval([])


# -- meta and files ------------------------------------------------------------------------------------


def test_meta_parsing(meta):
    assert parse_real_turns(["speech[0..9]", "setting.name", "action[0..3]"], 10) == {
        "speech": range(10), "action": range(4), "emote": range(0)}
    assert parse_real_personas(meta[2]["real_fields"]) == (False, True)
    with pytest.raises(LightDataError, match="outside"):
        parse_real_turns(["speech[0..14]"], 10)


def test_broken_fixture_files_fail_with_one_line(tmp_path):
    with pytest.raises(FileNotFoundError, match="not found"):
        load_fixture(tmp_path)
    (tmp_path / "fixture").mkdir()
    shutil.copy(FIXTURE_DIR / "light_data_fixture.pkl", tmp_path / "fixture")
    (tmp_path / "fixture" / "light_data_fixture_meta.json").write_text("[]", encoding="utf-8")
    with pytest.raises(LightDataError, match="one per fixture episode"):
        load_fixture(tmp_path)


# -- CLI --------------------------------------------------------------------------------------------------


def test_cli_fixture_json(capsys):
    assert main(["eval", "light", "--source", "fixture", "--model", "random", "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["data"] == LABEL and result["split"] == "fixture" and result["n"] == 86
    assert result["mean_candidates"] == 20 and result["episodes"] == 9
    low, high = result["ci95"]["r_at_1"]
    assert low <= result["r_at_1"] <= high
    assert result["bootstrap"]["resamples"] == 1000
    assert main(["eval", "light", "--source", "fixture", "--model", "random", "--task", "emote",
                 "--bootstrap", "0", "--json"]) == 0
    emote = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert emote["n"] == 5 and "accuracy" in emote and "ci95" not in emote
    assert main(["eval", "light", "--source", "fixture", "--model", "random", "--distractors", "unsaid",
                 "--bootstrap", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["distractors"] == "unsaid"


def test_cli_fixture_options_need_the_fixture(capsys):
    assert main(["eval", "light", "--source", "sim", "--candidate-seed", "1"]) == 2
    assert capsys.readouterr().err.strip() == "zoo eval light: error: --candidate-seed applies to --source fixture only"
    assert main(["eval", "light", "--source", "fixture", "--task", "emote", "--distractors", "all"]) == 2
    assert capsys.readouterr().err.strip() == "zoo eval light: error: --distractors applies to the dialogue task only"
