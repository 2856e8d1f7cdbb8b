"""StarSpace for LIGHT (Wu et al. 2018; Urbanek et al. 2019, Section 4).

StarSpace embeds every kind of thing (a dialogue context, an utterance, an action, an emote,
a world entity) as a bag of word embeddings drawn from ONE table learned from scratch, and
trains it so that a context lies closer to its gold candidate than to sampled negatives by a
margin. Because contexts and candidates share the space, the trained table doubles as a
semantic map of the world: :meth:`StarSpaceRanker.nearest` lists the objects, characters,
locations, actions and words nearest a query, the paper's Table 3.

Design choices, and why:

* The vocabulary is built in :meth:`~StarSpaceRanker.setup_from_data` from the distinct lines
  of the train split (context lines and candidates). LIGHT contexts repeat the episode so far
  in every example, so counting each distinct line once keeps counts meaningful (a line is not
  worth more for being early in a long episode) and keeps the build to seconds.
* Bags may be weighted by ``idf`` (ParlAI's StarSpace agent offers the same option): with
  near-orthogonal random embeddings a weighted bag is a random projection of a TF-IDF vector,
  so the model starts near the IR baseline and training only has to improve on it.
* The loss is StarSpace's hinge ``max(0, margin - sim(ctx, gold) + sim(ctx, neg))`` averaged
  over ``num_negatives`` negatives sampled from the example's other candidates and the other
  examples' golds in the batch (never a string equal to the gold).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from zoo.safe_json import read_json
from zoo.light.items import LightItem
from zoo.light.world import NEIGHBOUR_KINDS
from zoo.models.light_baselines import LineCache, tokenize
from zoo.models.neural_ranker import NeuralRanker, candidate_owner, pad_candidate_scores
from zoo.registry import register_model

UNK = "__unk__"
POOLINGS = ("mean", "sqrt")
SIMILARITIES = ("cosine", "dot")
KINDS = NEIGHBOUR_KINDS
ACTION_PREFIXES = ("_self_act ", "_partner_act ")
VOCAB_FILE, ACTIONS_FILE, ENTITIES_FILE = "vocab.json", "actions.json", "entities.json"


# ------------------------------------------------------------------------------ vocabulary
def distinct_lines(contexts: Iterable[str], candidates: Iterable[Sequence[str]]) -> set[str]:
    """Every distinct context line and candidate: the units words are counted over."""
    lines: set[str] = set()
    for context in contexts:
        lines.update(context.split("\n"))
    for cands in candidates:
        lines.update(cands)
    return lines


def build_vocabulary(lines: Iterable[str], min_count: int, max_vocab: int) -> tuple[list[str], list[int], int]:
    """Words in >= ``min_count`` lines, most frequent first (ties alphabetical), at most
    ``max_vocab`` of them after the UNK at index 0; also each word's line count and the number
    of lines, from which idf is computed. Sorting makes the result independent of set order."""
    counts: Counter[str] = Counter()
    n = 0
    for line in lines:
        counts.update(set(tokenize(line)))
        n += 1
    kept = sorted((w for w, c in counts.items() if c >= min_count and w != UNK), key=lambda w: (-counts[w], w))
    kept = kept[: max(0, max_vocab - 1)]
    return [UNK, *kept], [0, *(counts[w] for w in kept)], n


def idf_weights(counts: Sequence[int], n_lines: int) -> np.ndarray:
    """``log((1 + N) / (1 + df)) + 1`` as in the IR baseline; the UNK gets the smallest weight
    (an unknown word says little, and its zero count would otherwise make it the heaviest)."""
    df = np.asarray(counts, dtype=np.float64)
    idf = np.log((1.0 + n_lines) / (1.0 + df)) + 1.0
    if len(idf) > 1:
        idf[0] = idf[1:].min()
    return idf.astype(np.float32)


def frequent_actions(contexts: Iterable[str], items: Iterable[tuple[str, Sequence[str]]], limit: int) -> list[str]:
    """Distinct action strings of the training data (acted in contexts, or action candidates),
    most frequent first, for :meth:`StarSpaceRanker.nearest` ``kind="actions"``."""
    counts: Counter[str] = Counter()
    seen_lines: set[str] = set()
    for context in contexts:
        for line in context.split("\n"):
            if line.startswith(ACTION_PREFIXES) and line not in seen_lines:
                seen_lines.add(line)
                counts[line.split(" ", 1)[1].strip()] += 1
    for task, cands in items:
        if task == "action":
            counts.update(cands)
    return sorted(counts, key=lambda a: (-counts[a], a))[:limit]


# ------------------------------------------------------------------------------ bags
class Bags:
    """Turns texts into weighted bags of word ids for ``nn.EmbeddingBag(mode="sum")``.

    A text's weights are its term frequencies (``1 + log tf`` when ``sublinear``) times idf
    (when given), divided by the sum of weights (``mean``) or its square root (``sqrt``, the
    ``sum / sqrt(n)`` of StarSpace). Words outside the vocabulary count as the UNK.
    """

    def __init__(self, vocab: dict[str, int], idf: np.ndarray | None, pooling: str, sublinear: bool) -> None:
        self.vocab, self.idf, self.pooling, self.sublinear = vocab, idf, pooling, sublinear
        self._lines = LineCache(self._line_ids)

    def _line_ids(self, line: str) -> np.ndarray:
        return np.array([self.vocab.get(w, 0) for w in tokenize(line)], dtype=np.int64)

    def bag(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """(ids, normalised weights) of one text; empty arrays for a text without words."""
        parts = [self._lines(line) for line in text.split("\n")]
        ids = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        if not len(ids):
            return ids, np.zeros(0, dtype=np.float32)
        ids, tf = np.unique(ids, return_counts=True)
        weights = (1.0 + np.log(tf)) if self.sublinear else tf.astype(np.float64)
        if self.idf is not None:
            weights = weights * self.idf[ids]
        total = weights.sum()
        weights = weights / (total if self.pooling == "mean" else math.sqrt(total))
        return ids, weights.astype(np.float32)

    def batch(self, texts: Sequence[str]) -> dict[str, torch.Tensor]:
        """Flat ids, per-sample weights and offsets of several texts."""
        bags = [self.bag(t) for t in texts]
        lengths = np.array([len(ids) for ids, _ in bags], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]) if len(bags) else lengths
        ids = np.concatenate([b[0] for b in bags]) if bags else np.zeros(0, dtype=np.int64)
        weights = np.concatenate([b[1] for b in bags]) if bags else np.zeros(0, dtype=np.float32)
        return {"ids": torch.from_numpy(ids.astype(np.int64)), "weights": torch.from_numpy(weights.astype(np.float32)),
                "offsets": torch.from_numpy(offsets.astype(np.int64))}


# ------------------------------------------------------------------------------ model
@register_model("light-starspace")
class StarSpaceRanker(NeuralRanker):
    """StarSpace: one bag-of-words embedding space for contexts and candidates, hinge loss.

    The defaults are the released model's, tuned on LIGHT-sim dialogue with 20k training examples
    (valid and test limited to 2k): ``dim`` 256 above 128, ``margin`` 0.5 above 0.1 and 0.2, every
    negative above 10 sampled, ``learning_rate`` 1e-3 above 3e-3 and 1e-2 (higher rates forget the
    unseen world's words faster). One epoch of the full LIGHT-sim dialogue train split takes about
    3 minutes on one CPU thread.

    Args:
        dim: Width of the one embedding table contexts and candidates share.
        pooling: ``"mean"`` or ``"sqrt"`` (sum / sqrt(n)): how a bag's weighted words are pooled.
        similarity: ``"cosine"`` or ``"dot"``.
        margin: The hinge: ``max(0, margin - sim(ctx, gold) + sim(ctx, neg))``.
        num_negatives: Negatives sampled from the example's candidates and the batch's other golds;
            0 (or less): every negative of that pool, no sampling.
        learning_rate: AdamW's learning rate.
        weight_decay: AdamW's weight decay.
        min_count: Distinct training lines a word must appear in to enter the vocabulary.
        max_vocab: The vocabulary's size, UNK included.
        idf_weighting: Weigh a bag's words by idf (ParlAI's StarSpace ``-tfidf`` option).
        sublinear_tf: Weigh a word's count in a bag as ``1 + log tf``.
        max_actions: Training actions :meth:`nearest` can return.
        world: The LIGHT world source whose entity names :meth:`nearest` searches
            (see :func:`zoo.light.environment.load_world`).
    """

    def __init__(self, dim: int = 256, pooling: str = "mean", similarity: str = "cosine", margin: float = 0.5,
                 num_negatives: int = 0, learning_rate: float = 0.001, weight_decay: float = 0.0,
                 min_count: int = 2, max_vocab: int = 50_000, idf_weighting: bool = True, sublinear_tf: bool = True,
                 max_actions: int = 5000, world: str = "auto") -> None:
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"unknown pooling {pooling!r}; choose one of {POOLINGS}")
        if similarity not in SIMILARITIES:
            raise ValueError(f"unknown similarity {similarity!r}; choose one of {SIMILARITIES}")
        self.save_hyperparameters()
        self.vocab: dict[str, int] = {}
        self.actions: list[str] = []
        self.entities: dict[str, list[str]] | None = None
        self._resize(1)

    # -------------------------------------------------------------- vocabulary and table
    def _resize(self, size: int, idf: np.ndarray | None = None) -> None:
        """(Re)create the embedding table and the idf buffer for a vocabulary of ``size``.
        Small random rows: nearly orthogonal, so an untrained bag already compares words."""
        self.embedding = nn.EmbeddingBag(size, self.hparams.dim, mode="sum")
        nn.init.normal_(self.embedding.weight, std=self.hparams.dim ** -0.5)
        self.register_buffer("idf", torch.from_numpy(idf) if idf is not None else torch.ones(size))
        self._bags: Bags | None = None

    def _set_vocabulary(self, words: Sequence[str], idf: np.ndarray | None = None) -> None:
        self.vocab = {w: i for i, w in enumerate(words)}
        self._resize(len(words), idf)

    @property
    def bags(self) -> Bags:
        """The featuriser, rebuilt after the vocabulary changes (idf read from the buffer)."""
        if self._bags is None:
            idf = self.idf.detach().cpu().numpy() if self.hparams.idf_weighting else None
            self._bags = Bags(self.vocab, idf, self.hparams.pooling, self.hparams.sublinear_tf)
        return self._bags

    def setup_from_data(self, train: Any) -> None:
        """Vocabulary, idf and the action list from the train split (deterministic)."""
        examples = train.examples
        lines = distinct_lines(train.contexts, (e.candidates for e in examples))
        words, counts, n_lines = build_vocabulary(lines, self.hparams.min_count, self.hparams.max_vocab)
        self._set_vocabulary(words, idf_weights(counts, n_lines))
        self.actions = frequent_actions(train.contexts, ((e.task, e.candidates) for e in examples),
                                        self.hparams.max_actions)

    # -------------------------------------------------------------- batches
    def collate(self, items: Sequence[LightItem]) -> dict[str, Any]:
        """Bags of contexts and of the flattened candidates, each candidate's string key
        (equal strings share a key, so a negative is never a copy of the gold) and labels."""
        flat = [c for item in items for c in item.candidates]
        keys: dict[str, int] = {}
        return {
            "context": self.bags.batch([item.context for item in items]),
            "candidate": self.bags.batch(flat),
            "counts": torch.tensor([len(item.candidates) for item in items], dtype=torch.long),
            "keys": torch.tensor([keys.setdefault(c, len(keys)) for c in flat], dtype=torch.long),
            "labels": torch.tensor([item.label for item in items], dtype=torch.long),
        }

    # -------------------------------------------------------------- scoring
    def embed(self, bag: dict[str, torch.Tensor]) -> torch.Tensor:
        """``[N, dim]`` pooled embeddings of a bag batch."""
        return self.embedding(bag["ids"], bag["offsets"], per_sample_weights=bag["weights"])

    def similarity(self, left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
        """``[L, R]`` similarities: cosine (empty bags score 0) or dot product."""
        if self.hparams.similarity == "cosine":
            left, right = F.normalize(left, dim=-1), F.normalize(right, dim=-1)
        return left @ right.T

    def _pairwise(self, batch: dict[str, Any]) -> torch.Tensor:
        """``[B, N]``: every context against every candidate of the batch."""
        return self.similarity(self.embed(batch["context"]), self.embed(batch["candidate"]))

    def forward(self, batch: dict[str, Any]) -> torch.Tensor:
        """``[B, C_max]`` scores of each context's own candidates (``-inf`` padding)."""
        counts = batch["counts"]
        sims = self._pairwise(batch)
        owner = candidate_owner(counts)
        return pad_candidate_scores(sims[owner, torch.arange(len(owner), device=counts.device)], counts)

    # -------------------------------------------------------------- training
    @staticmethod
    def negative_pool(counts: torch.Tensor, labels: torch.Tensor, keys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Gold flat indices ``[B]`` and the negative mask ``[B, N]``: each example's own
        other candidates plus the other examples' golds, minus any string equal to its gold."""
        device = counts.device
        starts = torch.cumsum(counts, 0) - counts
        gold = starts + labels
        owner = candidate_owner(counts)
        is_gold = torch.zeros(len(owner), dtype=torch.bool, device=device)
        is_gold[gold] = True
        own = owner[None, :] == torch.arange(len(counts), device=device)[:, None]
        pool = own | is_gold[None, :]
        pool &= keys[None, :] != keys[gold][:, None]
        return gold, pool

    def sample_negatives(self, pool: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Up to ``num_negatives`` uniformly sampled indices per row of ``pool`` and whether
        each is real (rows with fewer negatives are padded with invalid picks)."""
        k = min(self.hparams.num_negatives, pool.shape[1]) if self.hparams.num_negatives > 0 else pool.shape[1]
        noise = torch.rand(pool.shape, device=pool.device).masked_fill(~pool, -1.0)
        picks = noise.topk(k, dim=1).indices
        return picks, pool.gather(1, picks)

    def margin_loss(self, batch: dict[str, Any]) -> torch.Tensor:
        """StarSpace's hinge, averaged over the valid sampled negatives of the batch."""
        sims = self._pairwise(batch).float()
        gold, pool = self.negative_pool(batch["counts"], batch["labels"], batch["keys"])
        picks, valid = self.sample_negatives(pool)
        positive = sims.gather(1, gold[:, None])
        hinge = F.relu(self.hparams.margin - positive + sims.gather(1, picks)) * valid
        return hinge.sum() / valid.sum().clamp(min=1)

    def training_step(self, batch: dict[str, Any], batch_idx: int) -> torch.Tensor:
        loss = self.margin_loss(batch)
        self.log("train/loss", loss, prog_bar=True, batch_size=len(batch["labels"]))
        return loss

    # -------------------------------------------------------------- neighbours (Table 3)
    def embed_texts(self, texts: Sequence[str]) -> torch.Tensor:
        """``[N, dim]`` embeddings of texts as bags (what a query or an entity name becomes)."""
        bag = self.bags.batch(list(texts))
        with torch.no_grad():
            return self.embed({k: v.to(self.device) for k, v in bag.items()}).float().cpu()

    def entity_names(self, data_dir: str | None = None) -> dict[str, list[str]]:
        """Names of the world's objects, characters and locations (loaded once, then kept and
        saved with the model so a saved model answers without the world files)."""
        if self.entities is None:
            from zoo.light.environment import load_world

            world = load_world(data_dir, self.hparams.world)
            self.entities = {
                "objects": _distinct(o.name for o in world.objects.values()),
                "characters": _distinct(c.name for c in world.characters.values()),
                "locations": _distinct(r.name for r in world.rooms.values()),
            }
        return self.entities

    def _vocabulary_neighbours(self, query: torch.Tensor, k: int) -> list[tuple[str, float]]:
        table = F.normalize(self.embedding.weight.detach().float().cpu()[1:], dim=-1)
        sims = table @ F.normalize(query, dim=-1)
        top = sims.topk(min(k, len(sims)))
        words = list(self.vocab)[1:]
        return [(words[i], float(s)) for s, i in zip(top.values.tolist(), top.indices.tolist())]

    def _text_neighbours(self, query: torch.Tensor, names: Sequence[str], k: int) -> list[tuple[str, float]]:
        vectors = self.embed_texts(names)
        known = vectors.norm(dim=-1) > 0  # a name without known words has no place in the space
        vectors, kept = vectors[known], [n for n, ok in zip(names, known.tolist()) if ok]
        if not kept:
            return []
        sims = F.normalize(vectors, dim=-1) @ F.normalize(query, dim=-1)
        top = sims.topk(min(k, len(sims)))
        return [(kept[i], float(s)) for s, i in zip(top.values.tolist(), top.indices.tolist())]

    def nearest(self, query: str, kind: str = "words", k: int = 10,
                data_dir: str | None = None) -> list[tuple[str, float]]:
        """The ``k`` nearest ``kind`` (objects, characters, locations, actions, words) to
        ``query`` by cosine in the learned space, best first, as ``(name, cosine)``."""
        if kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r}; choose one of {KINDS}")
        if not self.vocab or len(self.vocab) < 2:
            raise RuntimeError("the model has no vocabulary: train it (setup_from_data) or load a trained one")
        known = [w for w in tokenize(query) if w in self.vocab and w != UNK]
        if not known:
            raise ValueError(f"no word of {query!r} is in the model's vocabulary")
        vector = self.embed_texts([" ".join(known)])[0]
        if kind == "words":
            return self._vocabulary_neighbours(vector, k)
        names = self.actions if kind == "actions" else self.entity_names(data_dir)[kind]
        return self._text_neighbours(vector, names, k)

    # -------------------------------------------------------------- persistence
    def save_extra_files(self, directory: Path) -> None:
        (directory / VOCAB_FILE).write_text(json.dumps(list(self.vocab)))
        (directory / ACTIONS_FILE).write_text(json.dumps(self.actions))
        if self.entities is not None:
            (directory / ENTITIES_FILE).write_text(json.dumps(self.entities))

    def load_extra_files(self, directory: Path) -> None:
        """Size the table from the saved vocabulary before the weights (and idf) are loaded."""
        self._set_vocabulary(read_json(directory / VOCAB_FILE))
        actions = directory / ACTIONS_FILE
        self.actions = read_json(actions) if actions.is_file() else []
        entities = directory / ENTITIES_FILE
        self.entities = read_json(entities) if entities.is_file() else None

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """A Lightning checkpoint of a trained model: resize to its table before loading."""
        weight = checkpoint.get("state_dict", {}).get("embedding.weight")
        extra = checkpoint.get("starspace", {})
        if extra:
            self.vocab = {w: i for i, w in enumerate(extra["vocab"])}
            self.actions = list(extra.get("actions", []))
        if weight is not None and weight.shape[0] != self.embedding.weight.shape[0]:
            self._resize(weight.shape[0])

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        checkpoint["starspace"] = {"vocab": list(self.vocab), "actions": self.actions}


def _distinct(names: Iterable[str]) -> list[str]:
    """Names once each (case-insensitively, first spelling kept), sorted for determinism."""
    seen: dict[str, str] = {}
    for name in names:
        key = " ".join(name.lower().split())
        if key and key not in seen:
            seen[key] = name.strip()
    return sorted(seen.values(), key=str.lower)
