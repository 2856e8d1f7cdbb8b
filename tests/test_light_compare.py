"""Two LIGHT models compared on the same examples: the difference with a paired interval."""

from __future__ import annotations

import pytest

from tests.conftest import LIGHT_DATA


def test_a_paired_difference_resamples_the_same_examples_for_both_models():
    import torch

    from zoo.bootstrap_intervals import Bootstrap
    from zoo.light.evaluate import paired_difference

    first = {"hit": torch.tensor([1.0, 1.0, 0.0, 1.0] * 10)}
    second = {"hit": torch.tensor([1.0, 0.0, 0.0, 1.0] * 10)}  # agrees with the first except on case 2 of 4
    result = paired_difference(first, second, "r_at_1", Bootstrap(500, 0))
    assert result["r_at_1"] == 0.5 and result["difference"] == 0.25
    low, high = result["ci95"]
    assert 0.05 < low < 0.25 < high <= 0.4  # the mean of ten 1s and thirty 0s, resampled
    same = paired_difference(first, first, "r_at_1", Bootstrap(500, 0))
    assert same["difference"] == 0.0 and same["ci95"] == [0.0, 0.0]


def test_a_perplexity_interval_resamples_sums_not_per_example_ratios():
    from zoo.bootstrap_intervals import Bootstrap

    # one long line predicted well, three short ones badly: NLL per word is 16 / 16 = 1.0 over the
    # four, while the mean of the per-line rates would be (4 / 13 + 3 * 4) / 4, about 3.1
    rate, (low, high) = Bootstrap(500, 0).ratio([4.0, 4.0, 4.0, 4.0] * 5, [13.0, 1.0, 1.0, 1.0] * 5)
    assert rate == pytest.approx(1.0) and low < 1.0 < high
    with pytest.raises(ValueError, match="one numerator and one denominator per example"):
        Bootstrap(10).ratio([1.0, 2.0], [1.0])


def test_two_generators_compare_by_their_word_perplexity_on_the_same_golds():
    import math

    import torch

    from zoo.bootstrap_intervals import Bootstrap
    from zoo.light.evaluate import paired_word_perplexity

    words = torch.tensor([3, 5, 2, 8] * 6)
    second = {"nll": torch.tensor([4.0, 9.0, 1.5, 12.0] * 6, dtype=torch.double), "words": words}
    first = {"nll": second["nll"] - words * math.log(2), "words": words}  # half as perplexed on every word
    result = paired_word_perplexity(first, second, Bootstrap(200, 0))
    assert result["word_ppl"] == round(math.exp(26.5 / 18), 4)
    assert result["word_ppl_ratio"] == 0.5 and result["word_ppl_ratio_ci95"] == [0.5, 0.5]
    with pytest.raises(ValueError, match="different golds"):
        paired_word_perplexity(first, {**second, "words": words + 1}, Bootstrap(200, 0))


@pytest.mark.skipif(not (LIGHT_DATA / "fixture" / "light_data_fixture.pkl").is_file(), reason="no LIGHT fixture")
def test_zoo_eval_light_versus_reports_the_paired_difference(capsys):
    import json

    from zoo.cli import main

    assert main(["eval", "light", "--model", "random", "--versus", "random", "--source", "fixture", "--json"]) == 0
    versus = json.loads(capsys.readouterr().out)["versus"]
    assert versus["model"] == "random" and versus["difference"] == 0.0 and versus["ci95"] == [0.0, 0.0]


@pytest.mark.slow
def test_versus_features_scores_an_ablation_on_the_same_cases_each_with_its_own_grounding(tmp_path, capsys):
    """Table 5 with a paired interval: IR shown everything against IR shown the dialogue alone."""
    import json

    from light_rankers_support import make_tiny_corpus
    from zoo.cli import main

    corpus = str(make_tiny_corpus(tmp_path / "sim"))
    common = ["eval", "light", "--source", "sim", "--sim-dir", corpus, "--model", "ir", "--bootstrap", "200", "--json"]

    def r_at_1(features: str) -> float:
        assert main([*common, "--features", features]) == 0
        return json.loads(capsys.readouterr().out)["r_at_1"]

    everything, dialogue = r_at_1("parlai_default"), r_at_1("dialogue")
    assert everything != dialogue  # the grounding changes IR's ranking of these cases
    assert main([*common, "--versus", "ir", "--versus-features", "dialogue"]) == 0
    summary = json.loads(capsys.readouterr().out)
    versus = summary["versus"]
    assert summary["r_at_1"] == everything and versus["features"] == "dialogue" and versus["r_at_1"] == dialogue
    assert versus["difference"] == pytest.approx(everything - dialogue, abs=2e-6)  # each rounded to 6 places
    assert versus["ci95"][0] <= versus["difference"] <= versus["ci95"][1]


def test_versus_features_without_a_second_model_is_a_one_line_error(capsys):
    from zoo.cli import main

    assert main(["eval", "light", "--model", "random", "--versus-features", "dialogue"]) == 2
    assert capsys.readouterr().err.strip() == ("zoo eval light: error: --versus-features needs --versus, "
                                               "the model to show them to")
