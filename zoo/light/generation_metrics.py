"""Metrics of generated LIGHT text, as ParlAI computes them, as torchmetrics (reduced over ranks).

* :class:`Perplexity`: ``exp(summed token NLL / summed target tokens)`` over the whole
  split, padding excluded: one exponential of a corpus-level mean, not a mean of
  per-example perplexities.
* :class:`UnigramF1`: F1 of the word overlap between a generated utterance and the gold
  after ParlAI's normalisation (:func:`normalize_answer`), the best over the gold labels,
  averaged over examples.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import torch
from torchmetrics import Metric

_PUNCTUATION = re.compile(r"[!\"#$%&()*+,\-./:;<=>?@\[\\\]^`{|}~_']")
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """ParlAI's normalisation: lower-case; each of ``!"#$%&()*+,-./:;<=>?@[\\]^`{|}~_'``
    replaced by a space; the words a, an, the removed; whitespace collapsed."""
    text = _PUNCTUATION.sub(" ", text.lower())
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def unigram_f1(prediction: str, gold: str) -> float:
    """F1 of the multiset overlap of normalised words (0 when either side is empty)."""
    predicted, reference = normalize_answer(prediction).split(), normalize_answer(gold).split()
    common = sum((Counter(predicted) & Counter(reference)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(reference)
    return 2 * precision * recall / (precision + recall)


def best_f1(prediction: str, golds: str | Sequence[str]) -> float:
    """The best :func:`unigram_f1` over one or several gold labels."""
    golds = [golds] if isinstance(golds, str) else list(golds)
    if not golds:
        raise ValueError("at least one gold label is needed")
    return max(unigram_f1(prediction, gold) for gold in golds)


class Perplexity(Metric):
    """``exp(Σ NLL / Σ tokens)``; update with per-token NLL sums and token counts."""

    full_state_update = False
    higher_is_better = False

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.add_state("nll", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("tokens", default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")

    def update(self, nll_sum: torch.Tensor, token_count: torch.Tensor | int) -> None:
        self.nll += torch.as_tensor(nll_sum, dtype=torch.float64, device=self.nll.device).sum()
        self.tokens += torch.as_tensor(token_count, dtype=torch.long, device=self.tokens.device).sum()

    def compute(self) -> torch.Tensor:
        if self.tokens == 0:
            raise ValueError("Perplexity.compute() called before any update() with tokens")
        return torch.exp(self.nll / self.tokens)


class UnigramF1(Metric):
    """Mean over examples of :func:`best_f1` (ParlAI's ``f1``)."""

    full_state_update = False
    higher_is_better = True

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.add_state("total_f1", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("total", default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")

    def update(self, predictions: Sequence[str], golds: Sequence[str | Sequence[str]]) -> None:
        if len(predictions) != len(golds):
            raise ValueError(f"{len(predictions)} predictions but {len(golds)} gold labels")
        self.total_f1 += sum(best_f1(p, g) for p, g in zip(predictions, golds))
        self.total += len(predictions)

    def compute(self) -> torch.Tensor:
        if self.total == 0:
            raise ValueError("UnigramF1.compute() called before any update()")
        return self.total_f1 / self.total

