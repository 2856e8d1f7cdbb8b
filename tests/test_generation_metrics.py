"""ParlAI's generation metrics, checked by hand."""

import math

import pytest
import torch

from zoo.light.generation_metrics import (
    Perplexity,
    UnigramF1,
    best_f1,
    normalize_answer,
    unigram_f1,
)


@pytest.mark.parametrize("text, normalised", [
    ("The Knight's sword!", "knight s sword"),
    ("An apple, a pear & THE plum.", "apple pear plum"),
    ("well-known  (really)   fine", "well known really fine"),
    ("theatre is not the", "theatre is not"),  # whole words only
    ("under_score`tick~", "under score tick"),
    ("", ""),
])
def test_normalisation_is_parlais(text, normalised):
    assert normalize_answer(text) == normalised


def test_unigram_f1_by_hand():
    # prediction "i like the red sword" -> [i, like, red, sword]; gold "a red sword for me" -> [red, sword, for, me]
    # overlap 2: precision 2/4, recall 2/4, F1 0.5
    assert unigram_f1("I like the red sword", "a red sword for me") == pytest.approx(0.5)
    assert unigram_f1("sword sword", "sword") == pytest.approx(2 * 0.5 * 1.0 / 1.5)  # multiset overlap 1
    assert unigram_f1("", "anything") == 0.0
    assert unigram_f1("the", "a") == 0.0  # both normalise to nothing
    assert best_f1("red sword", ["blue shield", "red sword"]) == 1.0


def test_f1_metric_averages_examples():
    metric = UnigramF1()
    metric.update(["red sword", "nothing here"], ["red sword", "red sword"])
    assert metric.compute().item() == pytest.approx(0.5)


def test_perplexity_is_the_exponential_of_the_token_mean_with_padding_excluded():
    # two sequences: NLLs [1.0, 2.0] and [3.0] (a padded position is simply not counted)
    logits = torch.log(torch.tensor([[[0.5, 0.5], [0.25, 0.75]], [[0.9, 0.1], [0.5, 0.5]]]))
    labels = torch.tensor([[0, 1], [1, -100]])
    nll = torch.nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100, reduction="sum")
    metric = Perplexity()
    metric.update(nll, (labels != -100).sum())
    expected = math.exp((math.log(2) + math.log(4 / 3) + math.log(10)) / 3)
    assert metric.compute().item() == pytest.approx(expected)
    with pytest.raises(ValueError):
        Perplexity().compute()
