"""``LightRanker``: the base of every LIGHT model, the :class:`~zoo.protocols.Ranker` contract
on top of :class:`~zoo.grounded.Grounded`.

A subclass says how it scores each context's candidate list (``score_lists``); batching,
padding and ranking one context are written once here.
"""

from __future__ import annotations

from typing import Sequence

import torch

from zoo.grounded import Grounded
from zoo.protocols import Ranker


def pad_scores(rows: Sequence[torch.Tensor]) -> torch.Tensor:
    """Stack ragged per-example scores into ``[B, C_max]`` padded with ``-inf``."""
    width = max((len(r) for r in rows), default=0)
    out = torch.full((len(rows), width), float("-inf"))
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    return out


class LightRanker(Grounded, Ranker):
    """Base of LIGHT rankers: ``score`` over batches (from a subclass's ``score_lists``),
    ``rank`` for one context; optional abilities as :class:`~zoo.protocols.Ranker` declares them."""

    domain = "light"

    def score_lists(self, contexts: Sequence[str], candidates: Sequence[Sequence[str]]) -> list[torch.Tensor]:
        raise NotImplementedError

    def score(self, observations: Sequence[str], candidates: Sequence[Sequence[str]] | None = None) -> torch.Tensor:
        if candidates is None:
            raise ValueError("LIGHT rankers need the candidates of every context")
        if len(observations) != len(candidates):
            raise ValueError(f"{len(observations)} contexts but {len(candidates)} candidate lists")
        return pad_scores(self.score_lists(list(observations), [list(c) for c in candidates]))

    @torch.no_grad()
    def rank(self, context: str, candidates: Sequence[str]) -> list[tuple[str, float]]:
        """``(candidate, score)`` best first (stable for ties)."""
        scores = self.score([context], [list(candidates)])[0, : len(candidates)].tolist()
        order = sorted(range(len(candidates)), key=lambda i: -scores[i])
        return [(candidates[i], float(scores[i])) for i in order]
