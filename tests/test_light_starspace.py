"""StarSpace on LIGHT: train with the recipe on a tiny LIGHT-sim corpus, reload, look at the space.

Every test here reads as an example of using ``light-starspace``: the recipe's ``run()``
trains and tests it, ``from_pretrained`` brings it back, ``nearest`` and ``zoo light
neighbors`` show what it learned (the paper's Table 3).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from zoo.cli import main
from zoo.grounded import Grounded
from zoo.light.datamodule import LightDataModule
from zoo.light.environment import authored_world
from zoo.models.starspace import UNK, StarSpaceRanker, build_vocabulary, distinct_lines
from zoo.factory import create_model
from zoo.training.runner import run

RECIPE = "light-starspace"
CHANCE_R_AT_1 = 1 / 20  # dialogue: the gold among 20 candidates


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory):
    """A ``zoo light sim --preset tiny`` corpus in the small authored world (no data needed)."""
    out = tmp_path_factory.mktemp("light") / "tiny"
    assert main(["light", "sim", "--out", str(out), "--preset", "tiny", "--world", "authored"]) == 0
    return out


@pytest.fixture(scope="module")
def trained(corpus_dir, tmp_path_factory):
    """One short recipe run on dialogue: returns (results, run_dir)."""
    run_dir = tmp_path_factory.mktemp("runs") / "starspace-dialogue"
    results = run(RECIPE, [f"data.sim_dir={corpus_dir}", "data.task=dialogue", f"run_dir={run_dir}",
                           "logger.kind=none", "threads=1", "trainer.max_epochs=4", "data.batch_size=32",
                           "model.options.dim=64", "model.options.min_count=1", "model.options.world=authored"]).results
    return results, run_dir


@pytest.mark.slow
def test_recipe_trains_starspace_above_chance(trained):
    results, run_dir = trained
    assert results["model"] == "light-starspace" and results["data"] == "LIGHT-sim"
    assert results["test/r_at_1"] > 2 * CHANCE_R_AT_1
    assert results["test_unseen/r_at_1"] > 2 * CHANCE_R_AT_1
    assert json.loads((run_dir / "results.json").read_text())["test/r_at_1"] == results["test/r_at_1"]
    assert {"vocab.json", "actions.json", "model.safetensors"} <= {p.name for p in (run_dir / "pretrained").iterdir()}


@pytest.mark.slow
def test_from_pretrained_scores_like_the_trained_model(trained, corpus_dir):
    _, run_dir = trained
    model = Grounded.from_pretrained(run_dir / "pretrained")
    assert isinstance(model, StarSpaceRanker) and model.vocab and model.actions
    items = [LightDataModule("dialogue", source="sim", sim_dir=corpus_dir).dataset("test")[i] for i in range(5)]
    contexts, candidates = [i.context for i in items], [list(i.candidates) for i in items]
    again = Grounded.from_pretrained(run_dir / "pretrained")
    assert torch.equal(model.score(contexts, candidates), again.score(contexts, candidates))
    best, score = model.rank(contexts[0], candidates[0])[0]
    assert best in candidates[0] and -1.0 <= score <= 1.0  # cosine


@pytest.mark.slow
def test_nearest_words_start_with_the_query_and_entities_come_from_the_world(trained):
    _, run_dir = trained
    model = Grounded.from_pretrained(run_dir / "pretrained")
    word = next(w for w in model.vocab if w != UNK and w.isalpha())
    words = model.nearest(word, "words", k=5)
    assert words[0][0] == word and words[0][1] == pytest.approx(1.0, abs=1e-5)
    assert [s for _, s in words] == sorted((s for _, s in words), reverse=True)
    world_objects = {o.name for o in authored_world().objects.values()}
    objects = model.nearest(word, "objects", k=3)
    assert objects and {name for name, _ in objects} <= world_objects
    assert all(name in model.actions for name, _ in model.nearest(word, "actions", k=3))
    with pytest.raises(ValueError, match="vocabulary"):
        model.nearest("qqqzzzx", "words")


@pytest.mark.slow
def test_neighbors_command_prints_json_and_a_table(trained, capsys):
    _, run_dir = trained
    model = Grounded.from_pretrained(run_dir / "pretrained")
    word = next(w for w in model.vocab if w != UNK and w.isalpha())
    assert main(["light", "neighbors", word, "--model", str(run_dir / "pretrained"), "--kind", "words", "-k", "3",
                 "--json"]) == 0
    payload = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert payload["query"] == word and payload["neighbors"]["words"][0][0] == word
    assert main(["light", "neighbors", word, "--model", str(run_dir / "pretrained"), "-k", "2"]) == 0
    table = capsys.readouterr().out
    assert all(kind in table for kind in ("objects", "characters", "locations", "actions", "words"))
    assert main(["light", "neighbors", "qqqzzzx", "--model", str(run_dir / "pretrained")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_vocabulary_is_deterministic_and_counts_distinct_lines():
    lines = distinct_lines(["a cat\na cat\nthe dog", "the dog\na bird"], [("a cat", "sat")])
    assert lines == {"a cat", "the dog", "a bird", "sat"}
    words, counts, n = build_vocabulary(lines, min_count=1, max_vocab=4)
    assert words == [UNK, "a", "bird", "cat"] and counts == [0, 2, 1, 1] and n == 4
    assert build_vocabulary(sorted(lines, reverse=True), 1, 4) == (words, counts, n)


def test_negatives_are_other_candidates_and_other_golds_but_never_the_gold_string():
    counts, labels = torch.tensor([3, 2]), torch.tensor([0, 1])
    keys = torch.tensor([0, 1, 2, 3, 0])  # example 1's gold is the same string as example 0's
    gold, pool = StarSpaceRanker.negative_pool(counts, labels, keys)
    assert gold.tolist() == [0, 4]
    assert pool.tolist() == [[False, True, True, False, False], [False, False, False, True, False]]
    model = create_model("light-starspace", num_negatives=2)
    picks, valid = model.sample_negatives(pool)
    assert valid[0].all() and set(picks[0].tolist()) == {1, 2}
    assert valid[1].tolist().count(True) == 1 and picks[1][valid[1]].tolist() == [3]
