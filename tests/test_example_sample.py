"""``zoo eval blocks|light --limit N``: N examples drawn over the whole split with ``--seed``
(``--first``: the split's first N), and the result says which."""

from __future__ import annotations

import json

import pytest

from tests.conftest import requires_real_blocks
from zoo.cli import main
from zoo.light.datamodule import LightDataModule
from zoo.light.environment import authored_world
from zoo.light.sim import SimConfig, generate_corpus, write_corpus
from zoo.example_sample import describe_subset, subset_indices, subset_words


def last_json(capsys) -> dict:
    captured = capsys.readouterr()
    return json.loads(captured.out.strip().splitlines()[-1]), captured.err


def test_n_drawn_over_the_split_in_split_order_and_the_same_for_a_seed():
    drawn = subset_indices(1000, 50, seed=0)
    assert len(set(drawn)) == 50 and drawn == sorted(drawn) == subset_indices(1000, 50, seed=0)
    assert drawn != subset_indices(1000, 50, seed=1)
    assert min(drawn) < 100 and max(drawn) > 900  # spread over the split, not its start
    assert subset_indices(1000, 50, first=True) == list(range(50))
    assert subset_indices(30, 50) == subset_indices(30, None) == list(range(30))
    with pytest.raises(ValueError, match="at least 1"):
        subset_indices(30, 0)


def test_the_subset_is_described_for_json_and_for_a_person():
    assert describe_subset(100, 1719, 0, first=False) == {"n": 100, "of": 1719, "drawn": "spread", "seed": 0}
    assert describe_subset(100, 1719, 0, first=True) == {"n": 100, "of": 1719, "drawn": "first", "seed": None}
    assert describe_subset(1719, 1719, 0, first=False)["drawn"] == "all"
    assert subset_words(describe_subset(100, 1719, 3, False), "episodes") == "100 of 1,719 episodes drawn with seed 3"
    assert subset_words(describe_subset(100, 1719, 3, True), "episodes") == "the first 100 of 1,719 episodes"


def test_eval_blocks_limit_draws_over_the_split_and_first_keeps_the_start(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path))  # procedural boards: no data needed
    assert main(["eval", "blocks", "--model", "stop", "--procedural", "--limit", "20", "--json"]) == 0
    result, text = last_json(capsys)
    total = result["episodes"]["of"]
    assert result["episodes"] == {"n": 20, "of": total, "drawn": "spread", "seed": 0} and total > 20
    assert f"20 of {total:,} episodes drawn with seed 0" in text
    assert main(["eval", "blocks", "--model", "stop", "--procedural", "--limit", "20", "--first", "--json"]) == 0
    result, text = last_json(capsys)
    assert result["episodes"]["drawn"] == "first" and f"the first 20 of {total:,} episodes" in text
    with pytest.raises(SystemExit) as exit:
        main(["eval", "blocks", "--first"])
    assert exit.value.code == 2 and "--first needs --limit" in capsys.readouterr().err


@requires_real_blocks
def test_a_drawn_hundred_dev_episodes_estimate_the_whole_split(capsys):
    assert main(["eval", "blocks", "--model", "stop", "--json"]) == 0
    whole, _ = last_json(capsys)
    assert main(["eval", "blocks", "--model", "stop", "--limit", "100", "--json"]) == 0
    drawn, _ = last_json(capsys)
    assert drawn["mean_low"] < whole["mean"] < drawn["mean_high"]


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory):
    world, config = authored_world(), SimConfig.preset("tiny", world="authored")
    return write_corpus(generate_corpus(config, world), tmp_path_factory.mktemp("light") / "sim", config, world)


def test_light_datamodule_draws_its_limit_with_a_seed(corpus_dir):
    whole = LightDataModule("dialogue", source="sim", sim_dir=corpus_dir).examples("test")
    first = LightDataModule("dialogue", source="sim", sim_dir=corpus_dir, limit=7).examples("test")
    module = LightDataModule("dialogue", source="sim", sim_dir=corpus_dir, limit=7, limit_seed=0)
    drawn = module.examples("test")
    assert first == whole[:7] and module.split_sizes["test"] == len(whole)
    assert drawn == [whole[i] for i in subset_indices(len(whole), 7, seed=0)] and drawn != first


def test_eval_light_limit_says_which_examples_it_scored(corpus_dir, capsys):
    common = ["eval", "light", "--model", "random", "--source", "sim", "--sim-dir", str(corpus_dir), "--limit", "10"]
    assert main([*common, "--json"]) == 0
    result, text = last_json(capsys)
    total = result["examples"]["of"]
    assert result["n"] == 10 and result["examples"] == {"n": 10, "of": total, "drawn": "spread", "seed": 0}
    assert f"(10 of {total:,} examples drawn with seed 0)" in text
    assert main([*common, "--first", "--json"]) == 0
    result, text = last_json(capsys)
    assert result["examples"]["drawn"] == "first" and f"(the first 10 of {total:,} examples)" in text
