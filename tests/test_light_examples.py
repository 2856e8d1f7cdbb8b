"""LIGHT examples: ParlAI-exact flattening on the real fixture, candidates, feature sets, CLI."""

from __future__ import annotations

import json
import random
from typing import NamedTuple

import pytest

from tests.conftest import LIGHT_DATA

from zoo.cli import main
from zoo.light.candidates import (
    EMOTES,
    CandidateOptions,
    SpeechSampler,
    no_affordance_actions,
    speech_pool,
    split_emotes,
)
from zoo.light.examples import (
    build_all_examples,
    build_examples,
    build_split_examples,
    full_contexts,
    sample_train_episodes,
)
from zoo.light.features import FEATURE_SETS, PARLAI_DEFAULT, Features, get_features
from zoo.light.records import Agent, Episode, Setting, Turn
from zoo.light.release import load_episodes

FIXTURE_DIR = LIGHT_DATA / "fixture"
FIXTURE = FIXTURE_DIR / "light_data_fixture.pkl"

needs_data = pytest.mark.skipif(not FIXTURE.is_file(), reason=f"LIGHT fixture not found under {FIXTURE_DIR}")


class RealExample(NamedTuple):
    """A speech example of ParlAI's own light_dialog regression files (DefaultTeacher defaults)."""

    episode: int  # fixture episode
    view: str  # "A": self is agents[1] (written first); "B": self is agents[0]
    episode_done: bool
    label: str
    lines: tuple[str, ...]  # the example text, split at "\n"

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    @property
    def self_agent(self) -> int:
        return 1 if self.view == "A" else 0


@pytest.fixture(scope="module")
def fixture_episodes() -> list[Episode]:
    if not FIXTURE.is_file():
        pytest.skip(f"LIGHT fixture not found under {FIXTURE_DIR}")
    return load_episodes(FIXTURE, verify=False)


@pytest.fixture(scope="module")
def meta() -> list[dict]:
    return json.loads((FIXTURE_DIR / "light_data_fixture_meta.json").read_text(encoding="utf-8"))


def view_examples(examples, episode: int, self_agent: int):
    return [e for e in examples if e.episode == episode and e.self_agent == self_agent]


# -- ParlAI exactness on the real fixture -----------------------------------------------------------


@needs_data
def test_reference_covers_every_real_yaml_example_of_the_meta(meta):
    # The meta lists, per fixture episode, which views ParlAI's regression files show and how many
    # examples each; the reference below is exactly those examples.
    expected = {}
    for entry in meta:
        for source in entry.get("yaml_sources", []):
            view = "A" if source["perspective_self_agent_index"] == 1 else "B"
            expected[(entry["index"], view)] = source["n_examples"]
    found = {}
    for example in REAL_PARLAI_EXAMPLES:
        found[(example.episode, example.view)] = found.get((example.episode, example.view), 0) + 1
    assert found == expected
    assert sum(found.values()) == 40


@needs_data
def test_default_features_reproduce_real_parlai_examples_exactly(fixture_episodes, meta):
    for episode_index, entry in enumerate(meta):
        examples = build_examples([fixture_episodes[episode_index]], "dialogue")
        for view in ("A", "B"):
            reference = [r for r in REAL_PARLAI_EXAMPLES if r.episode == episode_index and r.view == view]
            if not reference:
                continue
            mine = view_examples(examples, 0, reference[0].self_agent)
            assert len(mine) >= len(reference)
            sources = {("A" if s["perspective_self_agent_index"] == 1 else "B"): s for s in entry["yaml_sources"]}
            complete = sources[view]["episode_done_in_yaml"] or not entry["truncated"].startswith("yes")
            for k, real in enumerate(reference):
                where = f"episode {episode_index} ({entry['setting']}), view {view}, example {k}"
                assert mine[k].text == real.text, where
                assert mine[k].label == real.label, where
                assert mine[k].task == "speech"
                if complete or k < len(reference) - 1:
                    # The fixture stops where the YAML stops, so the last example of a truncated
                    # dialogue ends our view but not ParlAI's.
                    assert mine[k].episode_done == real.episode_done, where


@needs_data
def test_spec_verified_example(fixture_episodes):
    example = build_examples(fixture_episodes[:1], "dialogue")[1]
    assert example.text == (
        "_self_say Good Evening. You must be the painter of this room.\n"
        "_partner_say Yes sir! do you have a preferred color?\n"
        "_self_act get brush"
    )
    assert example.label == "I am just a lowly worker. I think the red paint looks good. I can assist you with painting."


@needs_data
def test_every_utterance_is_a_speech_label_exactly_once(fixture_episodes):
    examples = build_examples(fixture_episodes, "dialogue")
    for index, episode in enumerate(fixture_episodes):
        labels = sorted((e.turn, e.label) for e in examples if e.episode == index)
        assert labels == sorted((t, turn.speech) for t, turn in enumerate(episode.turns))
        for e in examples:
            if e.episode == index:
                assert e.self_agent == e.turn % 2
    # Views: A first then B, the last example of each view closes it.
    first = [(e.episode, e.self_agent) for e in examples]
    assert first == sorted(first, key=lambda pair: (pair[0], -pair[1]))
    # Two views per dialogue, but a 1-turn dialogue has no view A (as 17075 = 2 * 8538 - 1 in train).
    assert sum(e.episode_done for e in examples) == 2 * len(fixture_episodes) - 1
    one_turn = view_examples(examples, 4, 0)
    assert len(one_turn) == 1 and one_turn[0].episode_done and not view_examples(examples, 4, 1)


@needs_data
def test_action_and_emote_examples(fixture_episodes):
    actions = build_examples(fixture_episodes, "action")
    golds = sorted((e.episode, e.turn, e.label) for e in actions)
    assert golds == sorted(
        (i, t, turn.action) for i, ep in enumerate(fixture_episodes) for t, turn in enumerate(ep.turns) if turn.action
    )
    first = actions[0]  # worker's "get brush" at turn 3 of the test dialogue, view A
    assert (first.episode, first.turn, first.label) == (0, 3, "get brush")
    assert first.text.startswith("_task_action\n_setting_name Castle Maids' Room, Inside Castle\n")
    assert first.text.endswith(
        "_self_say Good Evening. You must be the painter of this room.\n"
        "_partner_say Yes sir! do you have a preferred color?\n"
        "_self_say I am just a lowly worker. I think the red paint looks good. I can assist you with painting."
    )
    assert list(first.candidates) == list(fixture_episodes[0].turns[3].available_actions)
    emotes = build_examples(fixture_episodes, "emote")
    assert [(e.episode, e.turn, e.label) for e in emotes][:2] == [(0, 9, "smile"), (1, 5, "pout")]
    assert all(e.candidates == EMOTES for e in emotes)
    assert emotes[0].text.startswith("_task_emote\n")
    which = build_examples(fixture_episodes[:1], "which")
    assert [e.label for e in which if e.self_agent == 1] == ["none", "action", "action", "none", "emote"]
    assert all(e.candidates == ("none", "action", "emote") for e in which)


# -- candidates ---------------------------------------------------------------------------------------


@needs_data
def test_speech_candidates_are_gold_plus_19_from_the_split(fixture_episodes):
    examples = build_examples(fixture_episodes, "dialogue")
    pool = speech_pool(fixture_episodes)
    for example in examples:
        assert len(example.candidates) == 20 and example.label in example.candidates
        negatives = list(example.candidates)
        negatives.remove(example.label)
        assert example.label not in negatives and all(n in pool for n in negatives)
    assert examples == build_examples(fixture_episodes, "dialogue")  # seeded
    other = build_examples(fixture_episodes, "dialogue", candidates=CandidateOptions(seed=7))
    assert [e.candidates for e in other] != [e.candidates for e in examples]
    assert [e.text for e in other] == [e.text for e in examples]
    positions = {e.candidates.index(e.label) for e in examples}
    assert len(positions) > 5  # the gold is placed at random positions


def test_speech_sampler_draw_rule():
    pool = ["a", "b", "a", "gold", "c", "d", "gold"]
    sampler = SpeechSampler(pool, random.Random(3), num_candidates=5)
    for _ in range(50):
        candidates = sampler("gold")
        assert len(candidates) == 5 and candidates.count("gold") == 1
    # Fewer eligible utterances than needed: all of them, no endless loop.
    assert sorted(SpeechSampler(pool, random.Random(0), 20)("gold")) == sorted(["a", "a", "b", "c", "d", "gold"])
    assert SpeechSampler(["gold"], random.Random(0), 20)("gold") == ["gold"]
    # Duplicates among negatives come from distinct pool indices: "a" twice is possible, thrice is not.
    counts = [SpeechSampler(pool, random.Random(s), 6)("gold").count("a") for s in range(30)]
    assert max(counts) == 2


def test_speech_sampler_consumes_the_rng_as_parlai_did():
    # One draw = one randint over the pool; then one randrange for the gold slot.
    pool = [f"u{i}" for i in range(100)]
    rng, mirror = random.Random(42), random.Random(42)
    candidates = SpeechSampler(pool, rng, 4)("gold")
    drawn = [pool[mirror.randint(0, 99)] for _ in range(3)]  # no collisions for this seed
    slot = mirror.randrange(4)
    assert candidates == drawn[:slot] + ["gold"] + drawn[slot:]
    assert rng.random() == mirror.random()


def _two_splits() -> dict[str, list[Episode]]:
    def episode(tag: str, n: int) -> Episode:
        turns = tuple(Turn(speech=f"{tag} {t}") for t in range(n))
        return Episode(Setting("Hall", "Castle", "A hall."), (Agent("a", "A."), Agent("b", "B.")), turns)

    return {"train": [episode(f"train{i}", 6) for i in range(5)], "test": [episode(f"test{i}", 6) for i in range(5)]}


def test_parlai_rng_is_shared_across_splits_in_build_order():
    splits = _two_splits()
    shared = build_split_examples(splits, "test", "dialogue")
    rng = random.Random(42)
    build_examples(splits["train"], "dialogue", rng=rng)
    assert shared == build_examples(splits["test"], "dialogue", split="test", rng=rng)
    fresh = build_split_examples(splits, "test", "dialogue", candidates=CandidateOptions(rng="per_split"))
    assert fresh == build_examples(splits["test"], "dialogue", split="test")
    assert [e.candidates for e in fresh] != [e.candidates for e in shared]
    everything = build_all_examples(splits, "dialogue")
    assert everything[len(everything) - len(shared):] == shared
    assert all(e.split == "test" for e in shared) and all(c.startswith("test") for e in shared for c in e.candidates)


@needs_data
def test_emote_candidates_fixed_or_as_parlai_from_the_split(fixture_episodes):
    assert len(EMOTES) == 22 and list(EMOTES) == sorted(EMOTES) and "cringe" not in EMOTES
    assert split_emotes(fixture_episodes) == ["smile", "pout", "laugh", "wave", "growl"]
    examples = build_examples(fixture_episodes, "emote", candidates=CandidateOptions(emotes="split"))
    assert all(e.candidates == ("smile", "pout", "laugh", "wave", "growl") for e in examples)


def test_action_candidates_post_processing_and_no_affordance_set():
    turns = (
        Turn(speech="hi", available_actions=("hug b",), room_objects=("a rock", "an altar"),
             carrying=("a cup",), wearing=("a hat",)),
        Turn(speech="yo", action="get rock", available_actions=("hit a", "hug a"),
             room_objects=("a rock", "an altar"), carrying=("a coin",)),
    )
    episode = Episode(Setting("Hall", "Castle", "A hall."), (Agent("a", "A."), Agent("b", "B.")), turns)
    [example] = build_examples([episode], "action")
    assert example.candidates == ("hit a", "hug a", "get rock")  # gold appended when missing
    clipped = build_examples([episode], "action", candidates=CandidateOptions(clip=2))
    assert clipped[0].candidates == ("hit a", "get rock")  # trimmed while >= clip, then gold added
    naive = no_affordance_actions(episode, 1)
    assert naive == sorted(set(naive))
    for action in ("hit a", "hug a", "steal cup from a", "steal hat from a", "get rock", "get  altar",
                   "drop coin", "wield coin", "wear coin", "remove coin", "eat coin", "drink coin",
                   "give coin to a", "put coin in rock", "put coin in  altar"):
        assert action in naive, action
    assert not any(a.startswith("put coin in coin") for a in naive)
    assert no_affordance_actions(episode, 0) == sorted(
        {"hug b", "get rock", "get  altar"}
        | {f"{v} {o}" for o in ("cup", "hat") for v in ("drop", "wield", "wear", "remove", "eat", "drink")}
        | {"give cup to b", "give hat to b", "put cup in rock", "put cup in  altar", "put hat in rock",
           "put hat in  altar", "put cup in hat", "put hat in cup"}
    )
    [no_affordance] = build_examples([episode], "action", candidates=CandidateOptions(affordances=False))
    assert list(no_affordance.candidates) == naive



# -- feature sets --------------------------------------------------------------------------------------


def _all_text(episodes, features, task="dialogue") -> str:
    return "\n".join(e.text for e in build_examples(episodes, task, features))


def _tokens(text: str) -> set[str]:
    return {line.split(" ", 1)[0] for line in text.split("\n") if line.startswith("_")}


HEADER = {"_setting_name", "_setting_desc", "_partner_name", "_self_name", "_self_persona", "_object_desc"}
SPEECH = {"_partner_say", "_self_say"}
ACTS = {"_partner_act", "_self_act", "_partner_emote", "_self_emote"}


@needs_data
@pytest.mark.parametrize(
    "name, shown",
    [
        ("parlai_default", HEADER | SPEECH | ACTS),
        ("all", HEADER | SPEECH | ACTS),
        ("actions_emotes", ACTS),
        ("dialogue", SPEECH),
        ("dialogue_action_emote", SPEECH | ACTS),
        ("dialogue_persona", SPEECH | {"_self_persona", "_partner_name", "_self_name"}),
        ("dialogue_setting", SPEECH | {"_setting_name", "_setting_desc"}),
        ("dialogue_objects", SPEECH | {"_object_desc"}),
    ],
)
@pytest.mark.parametrize("task", ["dialogue", "action", "emote"])
def test_each_feature_set_shows_exactly_its_features(fixture_episodes, name, shown, task):
    # The test and valid dialogues have speech, actions and emotes of both agents. (For the emote task
    # a self emote is history only after it was a label, so not every token occurs in every task.)
    tokens = _tokens(_all_text(fixture_episodes[:2], name, task)) - {f"_task_{task.replace('dialogue', 'speech')}"}
    assert "_other_persona" not in tokens
    assert tokens <= shown
    assert tokens & HEADER == shown & HEADER
    assert bool(tokens & SPEECH) == bool(shown & SPEECH)
    assert bool(tokens & ACTS) == bool(shown & ACTS)
    if task == "dialogue":
        assert tokens == shown


def test_named_sets_and_parlai_teachers():
    assert get_features("parlai_default") == PARLAI_DEFAULT == Features() == get_features(None)
    assert get_features("all") == PARLAI_DEFAULT
    simple = get_features("parlai_simple")
    assert (simple.objects, simple.speech, simple.action, simple.emote, simple.current_self_output,
            simple.speech_prefix) == (False, "partner", "none", "none", "none", False)
    multi = get_features("parlai_simple_multi")
    assert not multi.taskname and multi.current_self_output == "all"
    with pytest.raises(ValueError, match="unknown LIGHT feature set"):
        get_features("everything")
    with pytest.raises(ValueError, match="feature 'speech' must be one of"):
        Features(speech="both")
    assert {"actions_emotes", "dialogue", "dialogue_action_emote", "dialogue_persona", "dialogue_setting",
            "dialogue_objects", "all", "parlai_default"} <= set(FEATURE_SETS)


@needs_data
def test_persona_choices_follow_parlai(fixture_episodes):
    episode = fixture_episodes[:1]
    painter, worker = episode[0].agents
    first = {p: build_examples(episode, "dialogue", Features(persona=p))[0].text for p in
             ("self", "all", "other", "partner", "none")}
    assert f"_self_persona {worker.persona}" in first["self"] and "_other_persona" not in first["self"]
    assert f"_self_persona {worker.persona}\n_other_persona {painter.persona}\n" in first["all"]
    assert "_self_persona" not in first["other"] and f"_other_persona {painter.persona}" in first["other"]
    # ParlAI quirk: its "partner" choice shows no persona at all (the builder tests for "other").
    assert "persona" not in first["partner"] and "persona" not in first["none"]


@needs_data
def test_header_order_and_toggles(fixture_episodes):
    text = build_examples(fixture_episodes[:1], "dialogue")[0].text
    order = [line.split(" ", 1)[0] for line in text.split("\n")]
    assert order[:6] == ["_task_speech", "_setting_name", "_setting_desc", "_partner_name", "_self_name",
                         "_self_persona"]
    assert order[6:14] == ["_object_desc"] * 8 and order[14:] == ["_partner_say"]
    no_task = build_examples(fixture_episodes[:1], "dialogue", Features(taskname=False))[0].text
    assert no_task == text.split("\n", 1)[1]
    bare = build_examples(fixture_episodes[:1], "dialogue", Features(speech_prefix=False))
    assert bare[0].text.endswith("\nhello") and "_say" not in "\n".join(e.text for e in bare)
    partner_only = _all_text(fixture_episodes[:1], Features(speech="partner"))
    assert "_partner_say" in partner_only and "_self_say" not in partner_only


@needs_data
def test_current_self_output_modes(fixture_episodes):
    episode = fixture_episodes[:1]
    default = build_examples(episode, "dialogue")
    assert default[1].text.endswith("_self_act get brush")  # the labelled turn's own action
    none = build_examples(episode, "dialogue", Features(current_self_output="none"))
    assert "_self_act get brush" not in none[1].text
    assert none[2].text.startswith(  # shown afterwards as history instead
        "_self_say I am just a lowly worker. I think the red paint looks good. I can assist you with painting.\n"
        "_self_act get brush\n"
    )
    filtered = build_examples(episode, "dialogue", Features(current_self_output="all_filtered"))
    assert [e.turn for e in filtered] == [3, 5, 9, 4, 8]  # only turns with an action or emote
    assert filtered[0].text.endswith("_self_act get brush")
    removed = build_examples(episode, "dialogue", Features(current_self_output="all_filtered_remove"))
    assert [e.turn for e in removed] == [3, 5, 9, 4, 8]
    assert not removed[0].text.endswith("_self_act get brush") and "_self_act get brush" in removed[1].text
    # The 2019 gate: no current _self_say for an action example when own speech is off.
    gated = build_examples(episode, "action", Features(speech="partner", speech_gates_current_say=True))
    head = build_examples(episode, "action", Features(speech="partner"))
    assert "_self_say" not in gated[0].text and head[0].text.endswith("_self_say " + episode[0].turns[3].speech)


@needs_data
def test_repeat_modes_replace_the_text(fixture_episodes):
    episode = fixture_episodes[:1]
    speech = [t.speech for t in episode[0].turns]
    partner = build_examples(episode, "dialogue", Features(repeat="partner_last"))
    assert [e.text for e in partner if e.self_agent == 1][:2] == [speech[0], speech[2] + "_self_act get brush"]
    self_last = build_examples(episode, "dialogue", Features(repeat="self_last"))
    assert [e.text for e in self_last if e.self_agent == 1][:2] == ["nothing", speech[1] + "_self_act get brush"]
    both = build_examples(episode, "dialogue", Features(repeat="both_last"))
    assert [e.text for e in both if e.self_agent == 1][:2] == [speech[0], f"{speech[1]} {speech[2]}_self_act get brush"]
    view_b = [e.text for e in both if e.self_agent == 0]
    assert view_b[0] == "None" and view_b[1] == f"{speech[0]} {speech[1]}"  # str(None), as upstream


@needs_data
def test_full_contexts_and_train_sampling(fixture_episodes):
    examples = build_examples(fixture_episodes[:2], "dialogue")
    contexts = full_contexts(examples)
    assert contexts[0] == examples[0].text
    assert contexts[1] == examples[0].text + "\n" + examples[1].text
    assert contexts[5] == examples[5].text  # view B starts afresh
    kept = sample_train_episodes(examples, 0.5)
    assert len([e for e in kept if e.episode_done]) == 2
    assert sorted(sample_train_episodes(examples, 1.0), key=examples.index) == examples


# -- command line -------------------------------------------------------------------------------------


@needs_data
def test_cli_prints_parlai_examples_as_json(capsys):
    code = main(["light", "examples", "--pickle", str(FIXTURE), "--no-verify", "--task", "dialogue",
                 "--split", "all", "--jsonl", "--limit", "6"])
    assert code == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 6 and all(set(r) == {"text", "label", "candidates", "episode_done"} for r in rows)
    reference = [r for r in REAL_PARLAI_EXAMPLES if r.episode == 0]
    assert [(r["text"], r["label"]) for r in rows[:5]] == [(r.text, r.label) for r in reference[:5]]
    assert rows[4]["episode_done"] and len(rows[0]["candidates"]) == 20


@needs_data
def test_cli_parlai_text_lines_and_tasks(capsys):
    assert main(["light", "examples", "--pickle", str(FIXTURE), "--no-verify", "--task", "action"]) == 0
    lines = capsys.readouterr().out.splitlines()
    fields = dict(field.split(":", 1) for field in lines[0].split("\t"))
    assert fields["labels"] == "get brush" and fields["text"].startswith("_task_action\\n_setting_name")
    assert "get brush" in fields["label_candidates"].split("|")
    assert sum(line.endswith("\tepisode_done:True") for line in lines) > 0
    assert main(["light", "examples", "--pickle", str(FIXTURE), "--no-verify", "--task", "emote", "--jsonl",
                 "--features", "dialogue"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {r["label"] for r in rows} == {"smile", "pout", "laugh", "wave", "growl"}
    assert all(len(r["candidates"]) == 22 for r in rows)


@needs_data
def test_cli_refuses_unverified_and_impossible_requests(capsys):
    assert main(["light", "examples", "--pickle", str(FIXTURE)]) == 2
    assert "--no-verify" in capsys.readouterr().err
    assert main(["light", "examples", "--pickle", str(FIXTURE), "--no-verify", "--split", "test"]) == 2
    assert "at least 4733 episodes" in capsys.readouterr().err


def test_cli_without_release_explains_where_to_put_it(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("ZOO_CACHE", str(tmp_path))
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path))
    assert main(["light", "examples", "--split", "test"]) == 2
    assert "--download" in capsys.readouterr().err


# -- the real ParlAI examples (parlai/tasks/light_dialog/test/*.yml, text and eval_labels) -------------
# Transcribed from the regression files listed in the fixture meta: light_dialog_{test,valid,train}.yml
# and, at commit 62ced54, light_dialog_{test_bs2,valid_stream_bs2,train_bs2,train_stream_bs2}.yml.

REAL_PARLAI_EXAMPLES = (
    RealExample(0, 'A', False, 'Good Evening. You must be the painter of this room.', (
        '_task_speech',
        "_setting_name Castle Maids' Room, Inside Castle",
        '_setting_desc Inside the maids room is dark and grey.  It is much different from the rest of the Castle which has grand walls and floors and paintings from famous painters around the wall.  The maid holds many secrets in this room.  One which is a secret door that holds paintings she should not have.',
        '_partner_name painter',
        '_self_name worker',
        '_self_persona I am a worker from a village up the river. I tie the logs our woodsmen fell into rafts, and steer them down to the next town for milling. I am hardworking and patient. I enjoy fishing off of the edge of the raft during quiet times on the raft.',
        "_object_desc a floor : THe floor is dusty and broken in several places. You don't quite trust it will hold your full weight.",
        '_object_desc a brush : Upon close inspection, the brush is dainty and carved with roses.',
        '_object_desc a tape : The tape is rudimentary but does the job well of holding the bandage in place. You can see a sticky resin on one side of the material.',
        '_object_desc a paint brushes : The paint brush has a long handle and dry black bristles.',
        '_object_desc a fresh red paint : The paint is a bright red color and easy to apply on a surface.',
        '_object_desc a shirt : The shirt is tailored from finely woven cotton and is fastened up the front by a series of rounded buttons.',
        '_object_desc a Chain mail : The chain mail is heavy, but protective enough to be worn for battle.',
        '_object_desc a A quiver : The quiver contains a mess of arrows, its leather frame stretched from years of use.',
        '_partner_say hello',
    )),
    RealExample(0, 'A', False, 'I am just a lowly worker. I think the red paint looks good. I can assist you with painting.', (
        '_self_say Good Evening. You must be the painter of this room.',
        '_partner_say Yes sir! do you have a preferred color?',
        '_self_act get brush',
    )),
    RealExample(0, 'A', False, 'Not too long. The paintings in this Castle are magnificent.', (
        '_self_say I am just a lowly worker. I think the red paint looks good. I can assist you with painting.',
        '_partner_say I will love that. Tell me, how long have you been here?',
        '_partner_act give brush to worker',
        '_self_act drop paint brushes',
    )),
    RealExample(0, 'A', False, 'Yes, In  the village where I work, the other workers speak of some of the hidden secrets of this castle.', (
        '_self_say Not too long. The paintings in this Castle are magnificent.',
        "_partner_say Nice, there are a lot of secret about the castle. Take this maid's room for instance, heard there are so many secrets about it",
    )),
    RealExample(0, 'A', False, 'Yes, we must get started but while we paint, it would not do any harm to keep an eye out for passages and secrets.', (
        '_self_say Yes, In  the village where I work, the other workers speak of some of the hidden secrets of this castle.',
        '_partner_say ok...i hope to get some truths however. We should get working, the night is upon us',
        '_partner_act get brush',
        '_self_emote smile',
    )),
    RealExample(0, 'B', False, 'hello', (
        '_task_speech',
        "_setting_name Castle Maids' Room, Inside Castle",
        '_setting_desc Inside the maids room is dark and grey.  It is much different from the rest of the Castle which has grand walls and floors and paintings from famous painters around the wall.  The maid holds many secrets in this room.  One which is a secret door that holds paintings she should not have.',
        '_partner_name worker',
        '_self_name painter',
        '_self_persona I was hired to paint a portrait of the noblewoman the king would eventually marry. It seems that the painting was too flattering and when the king lifted the veil, he was very angry. I have been imprisoned for four long years. I had a wife and six children, but they do not wait for me to return. I turn my agony into art.',
        "_object_desc a floor : THe floor is dusty and broken in several places. You don't quite trust it will hold your full weight.",
        '_object_desc a brush : Upon close inspection, the brush is dainty and carved with roses.',
        '_object_desc a tape : The tape is rudimentary but does the job well of holding the bandage in place. You can see a sticky resin on one side of the material.',
        '_object_desc a paint brushes : The paint brush has a long handle and dry black bristles.',
        '_object_desc a fresh red paint : The paint is a bright red color and easy to apply on a surface.',
        '_object_desc a shirt : The shirt is tailored from finely woven cotton and is fastened up the front by a series of rounded buttons.',
        '_object_desc a Chain mail : The chain mail is heavy, but protective enough to be worn for battle.',
        '_object_desc a A quiver : The quiver contains a mess of arrows, its leather frame stretched from years of use.',
    )),
    RealExample(0, 'B', False, 'Yes sir! do you have a preferred color?', (
        '_self_say hello',
        '_partner_say Good Evening. You must be the painter of this room.',
    )),
    RealExample(0, 'B', False, 'I will love that. Tell me, how long have you been here?', (
        '_self_say Yes sir! do you have a preferred color?',
        '_partner_say I am just a lowly worker. I think the red paint looks good. I can assist you with painting.',
        '_partner_act get brush',
        '_self_act give brush to worker',
    )),
    RealExample(0, 'B', False, "Nice, there are a lot of secret about the castle. Take this maid's room for instance, heard there are so many secrets about it", (
        '_self_say I will love that. Tell me, how long have you been here?',
        '_partner_say Not too long. The paintings in this Castle are magnificent.',
        '_partner_act drop paint brushes',
    )),
    RealExample(0, 'B', False, 'ok...i hope to get some truths however. We should get working, the night is upon us', (
        "_self_say Nice, there are a lot of secret about the castle. Take this maid's room for instance, heard there are so many secrets about it",
        '_partner_say Yes, In  the village where I work, the other workers speak of some of the hidden secrets of this castle.',
        '_self_act get brush',
    )),
    RealExample(1, 'A', False, 'Long time indeed! How have you been keeping?', (
        '_task_speech',
        '_setting_name Turquoise Shore, Shore',
        '_setting_desc A beautiful turquoise color water by the shore. It is filled with many gems and gold.',
        '_partner_name sea witch',
        '_self_name mermaid',
        '_self_persona I am one of the most beautiful mermaids to live in the sea. I like to watch the other sea creatures swim by me, including dolphins, who are my favorite creatures because they are so friendly. I fear the people who live on land because they hunt my kind.',
        '_object_desc a water : The water sits motionless.  It is clear.',
        "_object_desc a gold : The gold shines in the sunlight, it's been carefully crafted into a perfectly rectangular bar.",
        '_object_desc a thing : The thing is plentiful in the room, leaving a person wondering what the value is.',
        '_object_desc a treasure : The treasure glints and gleams with gold, jewels and other precious metals.  This seems like it would be worth a fair amount of coin.',
        '_object_desc a mermaid : I am one of the most beautiful mermaids to live in the sea. I like to watch the other sea creatures swim by me, including dolphins, who are my favorite creatures because they are so friendly. I fear the people who live on land because they hunt my kind.',
        '_object_desc a Crab : Look at those beautiful crabs! That would make a tasty dinner',
        '_object_desc a turquoise color water : the turqoise colored water is not quite transparent. it may house a creature that is not currently visible',
        '_object_desc a stone : The shiny stone was worn smooth, and all the roughness was gone.',
        '_object_desc a gem : The gem sparkles in the light. The colored stone is a dazzling sight.',
        '_object_desc a shell : The shell once washed up on the shore with the markings of a long sea travel.',
        '_object_desc a trident : The trident is battered and worn, rusty on ends.',
        '_partner_say Hey there Mermaid! Long time, no see.',
    )),
    RealExample(1, 'A', False, "I've been catching waves with the dolphins all morning. I thought I would come and get some sunshine. What kind of victims do you expect to find in a tranquil place like this?", (
        '_self_say Long time indeed! How have you been keeping?',
        '_partner_say Pretty good, You know how it goes. Just trying to find some unwitting victims. What are you doing in the Turquoise Shore?',
    )),
    RealExample(1, 'A', False, "His armor is particularly garrish. You know I don't fraternize with land dwellers.", (
        "_self_say I've been catching waves with the dolphins all morning. I thought I would come and get some sunshine. What kind of victims do you expect to find in a tranquil place like this?",
        '_partner_say What do you know about that knight standing over there?',
        '_self_emote pout',
    )),
    RealExample(1, 'A', False, 'I suppose the only thing left to complete the illusion is for him to get wet.', (
        "_self_say His armor is particularly garrish. You know I don't fraternize with land dwellers.",
        "_partner_say I don't know, I like when they're shiny like that. He looks like a giant fishing lure.",
        '_partner_emote laugh',
        '_self_act get stone',
    )),
    RealExample(1, 'A', False, "For a sea witch you've certainly got a pronounced moral compass", (
        '_self_say I suppose the only thing left to complete the illusion is for him to get wet.',
        "_partner_say Ahh, Let's not make him too rusty.",
        '_self_act drop stone',
    )),
    RealExample(1, 'B', False, 'Hey there Mermaid! Long time, no see.', (
        '_task_speech',
        '_setting_name Turquoise Shore, Shore',
        '_setting_desc A beautiful turquoise color water by the shore. It is filled with many gems and gold.',
        '_partner_name mermaid',
        '_self_name sea witch',
        '_self_persona I am a sea witch.  I pray on young sailors who hope to find adventure and treasures on the open sea.  I lure them in with magic spells and promise of riches.',
        '_object_desc a water : The water sits motionless.  It is clear.',
        "_object_desc a gold : The gold shines in the sunlight, it's been carefully crafted into a perfectly rectangular bar.",
        '_object_desc a thing : The thing is plentiful in the room, leaving a person wondering what the value is.',
        '_object_desc a treasure : The treasure glints and gleams with gold, jewels and other precious metals.  This seems like it would be worth a fair amount of coin.',
        '_object_desc a mermaid : I am one of the most beautiful mermaids to live in the sea. I like to watch the other sea creatures swim by me, including dolphins, who are my favorite creatures because they are so friendly. I fear the people who live on land because they hunt my kind.',
        '_object_desc a Crab : Look at those beautiful crabs! That would make a tasty dinner',
        '_object_desc a turquoise color water : the turqoise colored water is not quite transparent. it may house a creature that is not currently visible',
        '_object_desc a stone : The shiny stone was worn smooth, and all the roughness was gone.',
        '_object_desc a gem : The gem sparkles in the light. The colored stone is a dazzling sight.',
        '_object_desc a shell : The shell once washed up on the shore with the markings of a long sea travel.',
        '_object_desc a trident : The trident is battered and worn, rusty on ends.',
    )),
    RealExample(1, 'B', False, 'Pretty good, You know how it goes. Just trying to find some unwitting victims. What are you doing in the Turquoise Shore?', (
        '_self_say Hey there Mermaid! Long time, no see.',
        '_partner_say Long time indeed! How have you been keeping?',
    )),
    RealExample(1, 'B', False, 'What do you know about that knight standing over there?', (
        '_self_say Pretty good, You know how it goes. Just trying to find some unwitting victims. What are you doing in the Turquoise Shore?',
        "_partner_say I've been catching waves with the dolphins all morning. I thought I would come and get some sunshine. What kind of victims do you expect to find in a tranquil place like this?",
    )),
    RealExample(1, 'B', False, "I don't know, I like when they're shiny like that. He looks like a giant fishing lure.", (
        '_self_say What do you know about that knight standing over there?',
        "_partner_say His armor is particularly garrish. You know I don't fraternize with land dwellers.",
        '_partner_emote pout',
        '_self_emote laugh',
    )),
    RealExample(1, 'B', False, "Ahh, Let's not make him too rusty.", (
        "_self_say I don't know, I like when they're shiny like that. He looks like a giant fishing lure.",
        '_partner_say I suppose the only thing left to complete the illusion is for him to get wet.',
        '_partner_act get stone',
    )),
    RealExample(2, 'A', False, 'Yes brother the Lord of GloopdeGloo has blessed you with my presence. ', (
        '_task_speech',
        '_setting_name Beside church pews, Inside Church',
        '_setting_desc The church pews fill the church as far as the eye can see. They are made of wood, harvested from ancient trees long ago. They gleam with the look of tender love and care, since they are polished after each ceremony.',
        '_partner_name follower',
        '_self_name founder',
        "_self_persona We are the benevolent Founders of GloopdeGloo. Confident in our success, we need no outside advice, but we really can't do anything at all for ourselves. We require many acolytes to do our bidding, insufferable incompetents that we are!",
        '_object_desc a carvings : The carving depicts a woodland scene with animals and trees. The level of detail indicates that it has been made by a highly skilled artist.',
        '_object_desc a candle : A wax object, with a wick, that can be set on fire, and used for light.',
        '_object_desc an altar : The altar is made of alabastar and seems important.',
        '_object_desc a pew : The pew is made of wood and is very long.',
        '_object_desc a wood : Looks like the tree was struck by the lightening because the wood has a very unusual patterns',
        '_object_desc a tools : The tools are worn, showing their age, but still just as effective as the day they were welded.',
        '_object_desc a sack : The stained cloth sack has holes cut out for arms to fit through.',
        '_object_desc a knights armor : The armor is made of thin, lightweight metal and is covered in dents and stains from many battles.',
        '_partner_say God has given me much to appreciate',
        '_self_emote wave',
    )),
    RealExample(2, 'A', False, "You're so lucky to get to serve the benevolent Founders. Are you wondering why I have called you to the church today? ", (
        '_self_say Yes brother the Lord of GloopdeGloo has blessed you with my presence. ',
        '_partner_say The Lord looks down on me with great favor',
    )),
    RealExample(2, 'A', False, 'I have a special job for you follower. Have a seat on these ancient pews. ', (
        "_self_say You're so lucky to get to serve the benevolent Founders. Are you wondering why I have called you to the church today? ",
        '_partner_say Yes',
    )),
    RealExample(2, 'A', False, "This will be difficult for you I'm sure. I need you to put your feelings aside though. ", (
        '_self_say I have a special job for you follower. Have a seat on these ancient pews. ',
        '_partner_say Thank you!',
    )),
    RealExample(2, 'A', False, "Watch your tone follower! I need you to defile yourself by entering one of the unholier churches nearby. We have reason to believe they're conducting sacrifices. ", (
        "_self_say This will be difficult for you I'm sure. I need you to put your feelings aside though. ",
        '_partner_say What is it? Get it out',
    )),
    RealExample(3, 'A', False, 'looking for some jewels', (
        '_task_speech',
        '_setting_name Confessional, Inside Church',
        '_setting_desc The room is a small box, composed of sharply cut stone. The room is uncomfortably small, and filled with a lingering scent of something unfamiliar to the occupants.',
        '_partner_name an altar boy',
        '_self_name king',
        '_self_persona I am the king. I rule this kingdom alongside my wife, the queen. It is my divine right to be the king because my father was the king before me.',
        '_object_desc a candle : The candle is burning, with its wax running down the side.',
        '_partner_say Hello, What brings you here today?',
    )),
    RealExample(3, 'A', False, 'well what good would that do me?', (
        '_self_say looking for some jewels',
        '_partner_say You have come to a confessional, Sire.  There are no jewels here.  Only a place to confess thous sins. ',
    )),
    RealExample(3, 'A', False, "i'm not sure i haven't been here in awhile", (
        '_self_say well what good would that do me?',
        '_partner_say Something must have brought you here.  Do you have something on your mind that you wish to free your soul from?',
    )),
    RealExample(3, 'A', False, "I guess i haven't treated people with respect in my life", (
        "_self_say i'm not sure i haven't been here in awhile",
        '_partner_say You can meet with a priest in here and speak your heart.  A king must have a lot on his mind and have to do things that may or may not convict your heart. ',
    )),
    RealExample(3, 'A', False, 'thanks for the help this seems like a good place', (
        "_self_say I guess i haven't treated people with respect in my life",
        "_partner_say Please don't confess to me.  I'm a lowly altar boy but I shall pray for you.  If you ever need a trustworthy right hand at your throne...I am someone who can be trusted.  ",
    )),
    RealExample(4, 'B', False, 'Mmmm, man meat. My favorite!', (
        '_task_speech',
        '_setting_name Town Courtroom, Town',
        '_setting_desc This is a single large room, with an aisle leading up to where the magistrate sits, which is behind a bench and podium, on either side of the aisle there are wooden pews for spectators. There are a few maps on the walls and a flag of the land, and a statue of a thief having his hands chopped off by lady justice',
        '_partner_name thief',
        '_self_name monster',
        '_self_persona I am a monster in the realm of the king. I live in the catacombs of the castle. I have killed many prisoners.',
        '_object_desc a Potato : The potatoes are a little dirty, but can be delicious when prepared well.',
        '_object_desc a dark tunic : The dark tunic has frayed edges from general wear and tear.',
        "_object_desc a knife : A knife made out of copper. Doesn't rust but it's metal isn't as sturdy as something made out of other metals.",
    )),
    RealExample(5, 'A', False, "You're a bit bigger than my usual prey, but you'll do.", (
        '_task_speech',
        '_setting_name cave exit, Cave',
        '_setting_desc The large cave is covered along the walls with bright torches.  A large hole has been carved in the ceiling of the cave, right above the ladder that descends into the underground cave.  On good bright days, sunlight directly surround the hole with the gold ornate ladder descending into the underground part of the cave.  On the walls of the cave the torches illuminate many ornate drawings and paintings mainly dealing with the history of Kings of the realm.',
        '_partner_name miner',
        '_self_name a wild boar',
        '_self_persona I am a wild boar with razor sharp teeth. I hunt during the day and night. I like to lay down in the village a lot.',
        '_object_desc a Clothes : The clothing is functional and drab. The material felt course and rough in your hands.',
        '_partner_say Hey',
        '_self_act hit miner',
    )),
    RealExample(5, 'A', False, "Soft-fleshed idiot. You are unarmed and slow. I'll make short work of you.", (
        "_self_say You're a bit bigger than my usual prey, but you'll do.",
        '_partner_say You would die trying',
        '_partner_act hit a wild boar',
        '_self_emote growl',
    )),
    RealExample(5, 'A', False, "Don't speak in hypotheticals. It is not that you WOULDN'T make it easy for me. It is that by straying unarmed from your human villages, you HAVE made it easy for me. Not that you are very safe there, either, as I visit the nearest village without fear often.", (
        "_self_say Soft-fleshed idiot. You are unarmed and slow. I'll make short work of you.",
        "_partner_say I wouldn't make it easy for you",
    )),
    RealExample(5, 'A', True, "Wrestle a boar? So you're arrogant as well as stupid!", (
        "_self_say Don't speak in hypotheticals. It is not that you WOULDN'T make it easy for me. It is that by straying unarmed from your human villages, you HAVE made it easy for me. Not that you are very safe there, either, as I visit the nearest village without fear often.",
        '_partner_say I have faced other wild animals before now and i was able to wrestle my way out',
    )),
    RealExample(6, 'B', False, 'I am very strong', (
        '_task_speech',
        '_setting_name weathered shack, Abandoned',
        '_setting_desc A weathered shack with a roof made of old broken tiles sits in the middle of the forest. The wood is starting to split and the shack appears as if it will crumble at any moment.',
        '_partner_name animal',
        '_self_name man',
        "_self_persona I am a strong man. I work in the fields and pastures all day. I take of my master's sheep. One day I hope to have my own sheep.",
        '_object_desc a mildew : The mildew grows everywhere and the smell begins to make you sick.',
        '_object_desc a wood : Looks like the tree was struck by the lightening because the wood has a very unusual patterns',
        '_object_desc a fence : The fence is made of wood.  It is long and keeps intruders out.',
        '_object_desc a tile : Upon closer inspection, the tile seems\xa0coated with a mixture of candle wax and lamp oil. Whoever did this hope to cause someone pain.',
        '_object_desc a shack : The shack looks like it could collapse any second.',
        '_object_desc an a basket : The basket is woven with an intricate design.',
        '_object_desc a hoe for digging : The old garden hoe has been worn and rusted from tending to the sacred garden.',
        "_object_desc a sickle : The handle has been worn from use, and the blade is old and caked with dirt. This is a real farmer's tool, not something that's been used as ornamentation.",
        '_object_desc a shoe : An item of clothing worn on ones feet. Used to protect the food from the ground as well as decoration.',
    )),
    RealExample(6, 'B', False, 'What animal are you?', (
        '_self_say I am very strong',
        '_partner_say You may be strong but I can hear the threats you cannot. ',
    )),
    RealExample(6, 'B', False, 'aww', (
        '_self_say What animal are you?',
        '_partner_say I am a dog and I am here to keep you safe.',
        '_self_act hug animal',
    )),
    RealExample(6, 'B', False, 'Do you think someone is there?', (
        '_self_say aww',
        '_partner_say I can hear the wood in this house starting to split. This is not safe.',
    )),
    RealExample(6, 'B', False, "That's comforting", (
        '_self_say Do you think someone is there?',
        '_partner_say I think there is a girl here too',
    )),
)
