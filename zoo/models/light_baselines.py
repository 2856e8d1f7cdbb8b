"""LIGHT baselines (Urbanek et al. 2019): Random, TF-IDF IR, and a fastText-style ranker.

All are ``Grounded`` rankers over ParlAI-format contexts: ``score(contexts, candidates)``
gives ``[B, C]`` scores (``-inf`` in the padding of shorter candidate lists) and
``rank(context, candidates)`` the candidates best first. They run on the three tasks
(dialogue R@1/20, action and emote accuracy):

* ``light-random``: seeded uniform scores (chance).
* ``light-ir``: the paper's IR baseline: TF-IDF weights fitted on the training texts, cosine
  between the context and each candidate.
* ``light-fasttext``: fastText's recipe (hashed word uni- and bigrams, averaged embeddings,
  linear) used as a ranker: the context's bag against each candidate's bag, plus a
  per-candidate bias. With 22 fixed emotes this is a linear emote classifier; for actions it
  generalises to unseen candidate strings through their words. Trained with Lightning.
* ``light-candidates-only``: the same model blind to the context: it learns only which
  candidates tend to be right. It measures how much a corpus can be solved by surface
  tricks (should stay near chance).
"""

from __future__ import annotations

import json
import math
import re
import zlib
from collections import Counter
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from zoo.models.light_ranker import LightRanker
from zoo.safe_json import read_json
from zoo.registry import register_model

TOKEN = re.compile(r"[a-z0-9_']+")


def tokenize(text: str) -> list[str]:
    """Lower-cased words; special tokens such as ``_self_say`` stay one word."""
    return TOKEN.findall(text.lower())


class LineCache:
    """Caches a per-line featurisation. Full LIGHT contexts repeat the lines of the episode so
    far, so each line is processed once instead of once per later example."""

    def __init__(self, featurize, max_size: int = 500_000) -> None:
        self.featurize = featurize
        self.max_size = max_size
        self.cache: dict[str, object] = {}

    def __call__(self, line: str):
        value = self.cache.get(line)
        if value is None:
            if len(self.cache) >= self.max_size:
                self.cache.clear()
            value = self.cache[line] = self.featurize(line)
        return value


# ---------------------------------------------------------------------------------- Random
@register_model("light-random")
class RandomRanker(LightRanker):
    """Uniform random scores, seeded: chance level (R@1/20 = 5%, accuracy = 1/|candidates|)."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.generator = torch.Generator().manual_seed(seed)

    def score_lists(self, contexts, candidates):
        return [torch.rand(len(c), generator=self.generator) for c in candidates]


# ---------------------------------------------------------------------------------- IR
@register_model("light-ir")
class IRRanker(LightRanker):
    """TF-IDF word overlap: cosine between the context and each candidate (the paper's IR).

    ``fit(texts)`` learns the vocabulary and ``idf = log((1 + N) / (1 + df)) + 1`` from training
    texts (every example text and label of the train split). Term frequency is ``1 + log(tf)``
    when ``sublinear_tf``. Words unseen in training are ignored (they carry no weight).
    """

    def __init__(self, sublinear_tf: bool = True, min_df: int = 1) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.vocab: dict[str, int] = {}
        self.register_buffer("idf", torch.zeros(0))
        self._lines = LineCache(self._line_counts)

    @property
    def fitted(self) -> bool:
        return bool(self.vocab)

    def fit(self, texts: Iterable[str]) -> "IRRanker":
        df: Counter[str] = Counter()
        n = 0
        for text in texts:
            df.update(set(tokenize(text)))
            n += 1
        words = sorted(w for w, c in df.items() if c >= self.hparams.min_df)
        self.vocab = {w: i for i, w in enumerate(words)}
        self.idf = torch.tensor([math.log((1 + n) / (1 + df[w])) + 1.0 for w in words], dtype=torch.float32)
        self._lines = LineCache(self._line_counts)
        return self

    def _line_counts(self, line: str) -> Counter:
        return Counter(self.vocab[w] for w in tokenize(line) if w in self.vocab)

    def vector(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """Sparse L2-normalised TF-IDF vector of ``text``: (indices, values)."""
        counts: Counter = Counter()
        for line in text.split("\n"):
            counts.update(self._lines(line))
        if not counts:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        idx = np.fromiter(counts.keys(), dtype=np.int64, count=len(counts))
        tf = np.fromiter(counts.values(), dtype=np.float32, count=len(counts))
        if self.hparams.sublinear_tf:
            tf = 1.0 + np.log(tf)
        values = tf * self._idf_np[idx]
        return idx, values / np.linalg.norm(values)

    @property
    def _idf_np(self) -> np.ndarray:
        cached = getattr(self, "_idf_cache", None)
        if cached is None or len(cached) != len(self.idf):
            cached = self._idf_cache = self.idf.detach().cpu().numpy()
        return cached

    def score_lists(self, contexts, candidates):
        if not self.fitted:
            raise RuntimeError("IRRanker.fit(train_texts) must be called first (or load a fitted model)")
        dense = np.zeros(len(self.vocab), dtype=np.float32)
        rows = []
        for context, cands in zip(contexts, candidates):
            idx, values = self.vector(context)
            dense[idx] = values
            scores = []
            for candidate in cands:
                c_idx, c_values = self.vector(candidate)
                scores.append(float(dense[c_idx] @ c_values) if len(c_idx) else 0.0)
            dense[idx] = 0.0
            rows.append(torch.tensor(scores))
        return rows

    def save_extra_files(self, directory: Path) -> None:
        (directory / "vocab.json").write_text(json.dumps(sorted(self.vocab, key=self.vocab.get)))

    def load_extra_files(self, directory: Path) -> None:
        words = read_json(directory / "vocab.json")
        self.vocab = {w: i for i, w in enumerate(words)}
        self.idf = torch.zeros(len(words))
        self._lines = LineCache(self._line_counts)


# ---------------------------------------------------------------------------------- fastText
def _hash(token: str) -> int:
    return zlib.crc32(token.encode("utf-8"))


class HashedNgrams:
    """Word uni- and bigram ids hashed into ``buckets`` (fastText's trick: no vocabulary to fit,
    so the model is just its weights). crc32 keeps ids stable across processes."""

    def __init__(self, buckets: int, word_ngrams: int = 2) -> None:
        self.buckets = buckets
        self.word_ngrams = word_ngrams
        self._words: dict[str, int] = {}
        self._lines = LineCache(self._line_ids)

    def _word(self, word: str) -> int:
        value = self._words.get(word)
        if value is None:
            value = self._words[word] = _hash(word)
        return value

    def _line_ids(self, line: str) -> np.ndarray:
        hashes = np.array([self._word(w) for w in tokenize(line)], dtype=np.int64)
        ids = [hashes % self.buckets]
        for n in range(2, self.word_ngrams + 1):
            if len(hashes) >= n:
                mixed = hashes[: len(hashes) - n + 1].copy()
                for j in range(1, n):
                    mixed = (mixed * 1_000_003 + hashes[j: len(hashes) - n + 1 + j]) & 0xFFFFFFFF
                ids.append(mixed % self.buckets)
        return np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64)

    def __call__(self, text: str) -> np.ndarray:
        parts = [self._lines(line) for line in text.split("\n")]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _bag(arrays: Sequence[np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
    """(flat ids, offsets) for ``nn.EmbeddingBag``; an empty bag averages to zero."""
    lengths = np.array([len(a) for a in arrays], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]) if len(arrays) else np.zeros(0, dtype=np.int64)
    flat = np.concatenate(arrays) if len(arrays) else np.zeros(0, dtype=np.int64)
    return torch.from_numpy(flat.astype(np.int64)), torch.from_numpy(offsets.astype(np.int64))


@register_model("light-fasttext")
class FastTextRanker(LightRanker):
    """fastText-style linear ranker over hashed word n-grams (Joulin et al. 2017's recipe).

    ``score(context, c) = mean_ngrams(context) · mean_ngrams_out(c) + bias(c)``, both bags
    averaged embeddings of hashed uni/bigrams; trained with softmax cross-entropy over each
    example's candidates and Adam. ``use_context=False`` keeps only the bias: a
    candidates-only scorer. Tables are dense and modest (2^16 buckets x 32): on a CPU a dense
    Adam step over 4M weights is far cheaper than coalescing sparse gradients of long contexts.
    """

    def __init__(self, dim: int = 32, buckets: int = 1 << 16, word_ngrams: int = 2, lr: float = 0.01,
                 use_context: bool = True) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.context_embedding = nn.EmbeddingBag(buckets, dim, mode="mean")
        self.candidate_embedding = nn.EmbeddingBag(buckets, dim, mode="mean")
        self.candidate_bias = nn.EmbeddingBag(buckets, 1, mode="mean")
        nn.init.uniform_(self.context_embedding.weight, -1.0 / dim, 1.0 / dim)
        nn.init.zeros_(self.candidate_embedding.weight)
        nn.init.zeros_(self.candidate_bias.weight)
        self.ngrams = HashedNgrams(buckets, word_ngrams)

    # -------------------------------------------------------------- features
    def collate(self, items) -> dict[str, torch.Tensor]:
        """Tokenising collate for :class:`zoo.light.datamodule.LightDataModule` (``collate=``)."""
        batch = self.featurize([i.context for i in items], [list(i.candidates) for i in items])
        batch["labels"] = torch.tensor([i.label for i in items], dtype=torch.long)
        return batch

    def featurize(self, contexts: Sequence[str], candidates: Sequence[Sequence[str]]) -> dict[str, torch.Tensor]:
        # A context-blind model never reads the context: skip the work, keep the batch layout.
        empty = np.zeros(0, dtype=np.int64)
        context_ids, context_offsets = _bag([self.ngrams(c) if self.hparams.use_context else empty for c in contexts])
        flat = [c for cands in candidates for c in cands]
        candidate_ids, candidate_offsets = _bag([self.ngrams(c) for c in flat])
        return {
            "context_ids": context_ids, "context_offsets": context_offsets,
            "candidate_ids": candidate_ids, "candidate_offsets": candidate_offsets,
            "counts": torch.tensor([len(c) for c in candidates], dtype=torch.long),
        }

    # -------------------------------------------------------------- model
    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Scores ``[B, C_max]`` (``-inf`` padding) of a featurised batch."""
        counts = batch["counts"]
        owner = torch.repeat_interleave(torch.arange(len(counts)), counts)
        column = torch.arange(len(owner)) - (torch.cumsum(counts, 0) - counts)[owner]
        cand = self.candidate_embedding(batch["candidate_ids"], batch["candidate_offsets"])
        scores = self.candidate_bias(batch["candidate_ids"], batch["candidate_offsets"]).squeeze(-1)
        if self.hparams.use_context:
            ctx = self.context_embedding(batch["context_ids"], batch["context_offsets"])
            scores = scores + (ctx[owner] * cand).sum(-1)
        out = torch.full((len(counts), int(counts.max()) if len(counts) else 0), float("-inf"))
        out[owner, column] = scores
        return out

    def score_lists(self, contexts, candidates):
        with torch.no_grad():
            scores = self(self.featurize(contexts, candidates))
        return [scores[i, : len(c)] for i, c in enumerate(candidates)]

    def training_step(self, batch, batch_idx):
        loss = F.cross_entropy(self(batch), batch["labels"])
        self.log("train_loss", loss, prog_bar=True, batch_size=len(batch["labels"]))
        return loss

    def validation_step(self, batch, batch_idx):
        scores = self(batch)
        accuracy = (scores.argmax(-1) == batch["labels"]).float().mean()
        self.log("valid_r_at_1", accuracy, prog_bar=True, batch_size=len(batch["labels"]))

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


@register_model("light-candidates-only")
class CandidatesOnlyRanker(FastTextRanker):
    """The fastText ranker with the context hidden: a learned prior over candidate strings.
    A corpus where this beats chance by much can be partly solved without grounding."""

    def __init__(self, dim: int = 8, buckets: int = 1 << 16, word_ngrams: int = 2, lr: float = 0.01,
                 use_context: bool = False) -> None:
        super().__init__(dim=dim, buckets=buckets, word_ngrams=word_ngrams, lr=lr, use_context=False)
