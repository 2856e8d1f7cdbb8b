"""Transformer Memory Network on a tiny LIGHT-sim corpus: how a context is cut into memories,
a recipe run that learns, a save/load round trip, and emote ranking over the fixed 22."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from zoo.cli import main
from zoo.grounded import Grounded
from zoo.light.candidates import EMOTES
from zoo.light.datamodule import LightDataModule
from zoo.models.memnet import PAD, UNK, TransformerMemNet, build_vocab, split_context
from zoo.factory import create_model
from zoo.training.runner import run

RECIPE = "light-memnet"
SMALL_MODEL = ["model.options.dim=32", "model.options.layers=1", "model.options.heads=2", "model.options.ffn_dim=64",
               "model.options.learning_rate=3e-3", "model.options.warmup_steps=10", "model.options.vocab_min_count=1"]

# A real LIGHT-sim context (dialogue task), shortened to two objects.
CONTEXT = """_task_speech
_setting_name Front of the Cottage, Outside Cottage
_setting_desc Furs hang out on racks to try and get ready for tanning.
_partner_name rabbit
_self_name dog
_self_persona I am a dog on a small farm.  I help my master hunt for food.
_object_desc a fur : The fur is heavy and solid, good for keeping warm on winter nights.
_object_desc a rack : The rack appears to be made out of iron, and it is rusty in a few places.
_partner_say Oh! Hello there, dear. What are you doing in this front of the Cottage?
_partner_act hug deer
_self_emote applaud
_self_say Greetings, you. I protect the house from intruders and other animals.
_partner_say Teach the deer a lesson, dear.
_self_act hit deer"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("memnet") / "sim"
    assert main(["light", "sim", "--out", str(out), "--preset", "tiny", "--world", "authored"]) == 0
    return out


@pytest.fixture(scope="module")
def dialogue_run(corpus, tmp_path_factory) -> tuple[dict, Path]:
    run_dir = tmp_path_factory.mktemp("memnet-run")
    results = run(RECIPE, [f"data.sim_dir={corpus}", f"run_dir={run_dir}", "logger.kind=none", "threads=1",
                           "trainer.accelerator=cpu", "trainer.max_epochs=4", "data.batch_size=16",
                           "checkpoint.every_n_train_steps=1000", *SMALL_MODEL]).results
    return results, run_dir


def test_context_is_cut_into_grounding_memories_and_latest_turns():
    split = split_context(CONTEXT, context_lines=2, history_memories=1)
    assert split.memories == (
        ("_setting_name Front of the Cottage, Outside Cottage "
         "_setting_desc Furs hang out on racks to try and get ready for tanning."),
        "_partner_name rabbit _self_name dog",
        "_self_persona I am a dog on a small farm.  I help my master hunt for food.",
        "_object_desc a fur : The fur is heavy and solid, good for keeping warm on winter nights.",
        "_object_desc a rack : The rack appears to be made out of iron, and it is rusty in a few places.",
        "_self_say Greetings, you. I protect the house from intruders and other animals.",  # older turn: a memory
    )
    assert split.dialogue == ("_partner_say Teach the deer a lesson, dear.", "_self_act hit deer")
    # Without history memories the older turns are simply dropped; the _task_ line never shows.
    assert len(split_context(CONTEXT, context_lines=2).memories) == 5
    assert not any("_task_" in line for line in split.memories + split.dialogue)


def test_vocabulary_is_deterministic_and_starts_with_pad_and_unk():
    texts = ["the dog barks", "The cat", "a dog"]
    assert build_vocab(texts, min_count=1) == [PAD, UNK, "dog", "the", "a", "barks", "cat"]
    assert build_vocab(texts, min_count=2) == [PAD, UNK, "dog", "the"]
    assert build_vocab(texts, min_count=1, max_size=4) == [PAD, UNK, "dog", "the"]


@pytest.mark.slow
def test_recipe_trains_a_memnet_that_beats_chance(dialogue_run):
    results, run_dir = dialogue_run
    assert results["model"] == "light-memnet" and results["data"] == "LIGHT-sim"
    # Chance is 0.05 (R@1/20). Unseen rooms and characters are far harder with 60 train dialogues.
    assert results["test/r_at_1"] > 0.15 and results["test_unseen/r_at_1"] > 0.05
    assert (run_dir / "results.json").is_file() and (run_dir / "pretrained" / "vocab.json").is_file()


@pytest.mark.slow
def test_from_pretrained_gives_identical_scores(dialogue_run, corpus):
    _, run_dir = dialogue_run
    data = LightDataModule("dialogue", source="sim", sim_dir=corpus, limit=20)
    items = [data.dataset("test")[i] for i in range(20)]
    contexts, candidates = [i.context for i in items], [list(i.candidates) for i in items]
    first = Grounded.from_pretrained(run_dir / "pretrained")
    second = Grounded.from_pretrained(run_dir / "pretrained")
    assert isinstance(first, TransformerMemNet) and len(first.words) > 100
    scores = first.score(contexts, candidates)
    assert scores.shape == (20, 20) and torch.equal(scores, second.score(contexts, candidates))
    assert first.rank(contexts[0], candidates[0])[0][1] == pytest.approx(float(scores[0].max()))


def test_emotes_are_ranked_against_all_22(corpus):
    data = LightDataModule("emote", source="sim", sim_dir=corpus, limit=8)
    model = create_model("light-memnet", dim=16, layers=1, heads=2, ffn_dim=32, vocab_min_count=1)
    model.setup_from_data(data.dataset("train"))
    items = [data.dataset("test")[i] for i in range(8)]
    assert all(sorted(item.candidates) == sorted(EMOTES) for item in items) and len(EMOTES) == 22
    batch = model.collate(items)
    scores, _ = model.training_scores(batch)
    # Every other example's gold is one of the 22 already scored: no in-batch negative is added.
    assert not batch["negatives"].any() and torch.isinf(scores[:, 22:]).all()
    assert model.score([i.context for i in items], [list(i.candidates) for i in items]).isfinite().all()
