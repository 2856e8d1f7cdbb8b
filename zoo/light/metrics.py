"""Ranking metrics of the LIGHT tasks as torchmetrics: R@k (dialogue R@1/20) and accuracy.

Scores come as ``[B, C]`` with ``-inf`` in the padding of shorter candidate lists (action
lists vary in length) and the gold's column as the target. Ties are scored by their
expectation under a random tie-break: a gold tied with ``m`` others and beaten by ``g``
counts ``(k - g) / (m + 1)`` clipped to [0, 1]. So a scorer that gives every candidate the
same score (a bag-of-words model that knows none of the words) gets exactly chance, not the
luck of where the gold sits in the list; action lists are sorted and emotes come in a fixed
order, so "first wins" would otherwise be a hidden bias.
"""

from __future__ import annotations

import torch
from torchmetrics import Metric


def expected_hits(scores: torch.Tensor, target: torch.Tensor, k: int = 1) -> torch.Tensor:
    """Per-example expected hit@k under random tie-breaking (see the module docstring)."""
    scores = scores.float()
    gold = scores.gather(1, target.view(-1, 1))
    if not torch.isfinite(gold).all():
        raise ValueError("the gold candidate has a non-finite score (is the target pointing into the padding?)")
    greater = (scores > gold).sum(dim=1).float()
    ties = (scores == gold).sum(dim=1).float()  # includes the gold itself
    return ((k - greater) / ties).clamp(0.0, 1.0)


def reciprocal_ranks(scores: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Per-example 1 / rank of the gold, in float64; a gold tied with others takes its mean
    rank among them."""
    gold = scores.float().gather(1, target.view(-1, 1))
    greater = (scores.float() > gold).sum(dim=1).double()
    ties = (scores.float() == gold).sum(dim=1).double()
    return 1.0 / (greater + (ties + 1) / 2)


class RecallAtK(Metric):
    """R@k: the (expected) fraction of examples whose gold is among the ``k`` best candidates.

    With 20 candidates per example, ``RecallAtK(1)`` is the paper's dialogue R@1/20.
    """

    full_state_update = False
    higher_is_better = True

    def __init__(self, k: int = 1, **kwargs) -> None:
        super().__init__(**kwargs)
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        self.k = k
        self.add_state("hits", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("total", default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")

    def update(self, scores: torch.Tensor, target: torch.Tensor) -> None:
        target = torch.as_tensor(target, dtype=torch.long, device=scores.device)
        if scores.dim() != 2 or target.shape != scores.shape[:1]:
            raise ValueError(f"expected scores [B, C] and target [B], got {tuple(scores.shape)} and {tuple(target.shape)}")
        self.hits += expected_hits(scores, target, self.k).double().sum()
        self.total += target.numel()

    def compute(self) -> torch.Tensor:
        if self.total == 0:
            raise ValueError(f"{type(self).__name__}.compute() called before any update()")
        return self.hits / self.total


class RankingAccuracy(RecallAtK):
    """Accuracy of picking the gold among the candidates (action and emote tasks): R@1."""

    def __init__(self, **kwargs) -> None:
        super().__init__(k=1, **kwargs)


class MeanReciprocalRank(Metric):
    """Mean of 1 / rank of the gold (ties: the gold's mean rank among them)."""

    full_state_update = False
    higher_is_better = True

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.add_state("total_rr", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("total", default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")

    def update(self, scores: torch.Tensor, target: torch.Tensor) -> None:
        target = torch.as_tensor(target, dtype=torch.long, device=scores.device)
        self.total_rr += reciprocal_ranks(scores, target).sum()
        self.total += target.numel()

    def compute(self) -> torch.Tensor:
        if self.total == 0:
            raise ValueError("MeanReciprocalRank.compute() called before any update()")
        return self.total_rr / self.total
