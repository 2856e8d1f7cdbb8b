"""Candidate embeddings kept between calls, and dropped the moment the weights change.

A bi-ranker scores a context against candidates it encodes on its own, so a fixed candidate
set (the 22 emotes, every training utterance for retrieval) need only be encoded once per
set of weights. The cache stamps its entries with the encoder parameters' storage and version
counters: every in-place change (an optimizer step, ``load_state_dict``, a manual edit under
``no_grad``) bumps a version, and moving the module re-allocates its storage, so a stale
embedding is never served, whoever changed the weights and however.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

Encode = Callable[[Sequence[str]], torch.Tensor]


def weights_stamp(module: nn.Module) -> tuple:
    """Identity of the current weights: changes whenever any parameter changes."""
    return tuple((p.data_ptr(), p._version) for p in module.parameters())


class CandidateCache:
    """``text -> embedding`` for the candidates of one encoder."""

    def __init__(self, encoder: nn.Module) -> None:
        self.encoder = encoder
        self._rows: dict[str, torch.Tensor] = {}
        self._stamp: tuple | None = None
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._rows)

    def clear(self) -> None:
        self._rows.clear()
        self._stamp = None

    def fresh(self) -> bool:
        """Whether the stored rows were made with the current weights."""
        return self._stamp == weights_stamp(self.encoder)

    def lookup(self, texts: Sequence[str], encode: Encode) -> torch.Tensor:
        """Embeddings ``[len(texts), D]``; texts not stored yet are encoded once, together."""
        if not self.fresh():
            self.clear()
            self._stamp = weights_stamp(self.encoder)
        missing = list(dict.fromkeys(t for t in texts if t not in self._rows))
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        if missing:
            for text, row in zip(missing, encode(missing)):
                self._rows[text] = row
        return torch.stack([self._rows[t] for t in texts]) if texts else torch.zeros(0)


@dataclass
class RetrievalIndex:
    """A large fixed candidate set as one matrix, for top-k search by a matrix product."""

    texts: list[str]
    matrix: torch.Tensor
    stamp: tuple

    def search(self, queries: torch.Tensor, k: int) -> list[list[tuple[str, float]]]:
        scores = queries @ self.matrix.T
        values, indices = scores.topk(min(k, len(self.texts)), dim=-1)
        return [[(self.texts[i], float(v)) for i, v in zip(row_i.tolist(), row_v.tolist())]
                for row_i, row_v in zip(indices, values)]
