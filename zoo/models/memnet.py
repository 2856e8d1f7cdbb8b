"""Transformer Memory Network for LIGHT (Urbanek et al. 2019 §4, after Dinan et al. 2019).

The paper's strongest non-BERT ranker keeps the grounding apart from the conversation: every
grounding line is a *memory* and the latest turns are the *query*. Here:

* :func:`split_context` cuts a ParlAI-format context into memory slots (setting name and
  description together, the two names, each persona, each object description, and up to
  ``history_memories`` earlier dialogue/action/emote lines) and the dialogue context (the last
  ``context_lines`` lines, truncated from the left to ``max_context_tokens``). The ``_task_``
  line is dropped: it is the same in every example of a run.
* One word vocabulary (built by :meth:`TransformerMemNet.setup_from_data` from the train split,
  saved as ``vocab.json``) and one token embedding table feed two small transformer encoders
  (learned positions, mean pooling over non-pad tokens): one for the memories and the dialogue
  context (both are "what the agent knows", in the same line format), one for the candidates
  (replies live in their own space; ``shared_candidate_encoder=True`` uses one encoder for
  all). Sharing the embeddings keeps unseen-test words that occur in both sides aligned.
* The context vector attends over its memories (scaled dot product, ``hops`` times,
  residual: ``q <- q + sum(softmax(q·m) m)``) and scores each candidate by dot product.
* Training: cross-entropy over the example's candidates plus, with ``in_batch_negatives``, the
  other examples' golds (skipping any equal to one of the example's own candidates, so the
  fixed 22 emotes and shared actions are never counted as wrong twice).

Everything is batched for the CPU: all memories of a batch are one ``[N_mem, L]`` tensor, all
candidates one ``[N_cand, L]``, and each distinct line is tokenised once (:class:`LineCache`).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from zoo.safe_json import read_json
from zoo.light.items import LightItem
from zoo.models.light_baselines import LineCache, tokenize
from zoo.models.neural_ranker import NeuralRanker, candidate_owner, pad_candidate_scores
from zoo.registry import register_model

PAD, UNK = "<pad>", "<unk>"
PAD_ID, UNK_ID = 0, 1

DIALOGUE_PREFIXES = ("_partner_say", "_self_say", "_partner_act", "_self_act", "_partner_emote", "_self_emote")
"""Lines that are the conversation itself; every other ``_token`` line is grounding."""


# ---------------------------------------------------------------------------------- splitting
@dataclass(frozen=True)
class SplitContext:
    """A context cut into grounding memories (one string per slot) and the latest lines."""

    memories: tuple[str, ...]
    dialogue: tuple[str, ...]


def _prefix(line: str) -> str:
    return line.split(" ", 1)[0] if line.startswith("_") else ""


def split_context(context: str, context_lines: int = 3, history_memories: int = 0) -> SplitContext:
    """Memories and dialogue lines of a ParlAI-format ``context`` (see the module docstring).

    Setting name and description form one slot (the description explains the name), as do
    the two names (they only mean something together). Lines without a known ``_token``
    prefix (e.g. the bare utterances of the ``*_last`` repeat baselines) count as dialogue.
    """
    setting, names, grounding, dialogue = [], [], [], []
    for line in context.split("\n"):
        prefix = _prefix(line)
        if not line.strip() or prefix.startswith("_task_"):
            continue
        if prefix in ("_setting_name", "_setting_desc"):
            setting.append(line)
        elif prefix in ("_partner_name", "_self_name"):
            names.append(line)
        elif prefix and prefix not in DIALOGUE_PREFIXES:
            grounding.append(line)
        else:
            dialogue.append(line)
    recent = dialogue[len(dialogue) - context_lines:] if context_lines > 0 else []
    earlier = dialogue[: len(dialogue) - len(recent)]
    history = earlier[len(earlier) - history_memories:] if history_memories > 0 else []
    slots = [" ".join(group) for group in (setting, names) if group] + grounding + history
    return SplitContext(tuple(slots), tuple(recent))


# ---------------------------------------------------------------------------------- vocabulary
def build_vocab(texts: Iterable[str], min_count: int = 2, max_size: int = 30_000) -> list[str]:
    """Words by falling count (ties alphabetical, so every process builds the same list),
    those seen at least ``min_count`` times, capped at ``max_size`` entries with PAD and UNK."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(tokenize(text))
    words = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
    return [PAD, UNK, *words[: max(0, max_size - 2)]]


def _training_texts(train: Any) -> Iterable[str]:
    """Each context line once per view (an example's ``text`` is what is new since the last
    example, so this equals reading every context without its repeats) and each distinct
    candidate once (speech candidates are drawn again and again from one pool)."""
    yield from (example.text for example in train.examples)
    yield from sorted({c for example in train.examples for c in example.candidates})


def _pad(rows: Sequence[np.ndarray]) -> torch.Tensor:
    """``[N, L_max]`` token ids, PAD on the right; every row holds at least one token."""
    width = max((len(r) for r in rows), default=1)
    out = np.full((len(rows), max(width, 1)), PAD_ID, dtype=np.int64)
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    return torch.from_numpy(out)


# ---------------------------------------------------------------------------------- encoder
class MemNetEncoder(nn.Module):
    """Token ids ``[N, L]`` -> vectors ``[N, dim]``: positions added, a transformer encoder,
    mean over the non-pad tokens. The token table is an argument, so that encoders share it
    without holding it twice in the state dict."""

    def __init__(self, dim: int, layers: int, heads: int, ffn_dim: int, dropout: float, max_len: int) -> None:
        super().__init__()
        self.positions = nn.Embedding(max_len, dim)
        nn.init.normal_(self.positions.weight, std=0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, ffn_dim, dropout, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, ids: torch.Tensor, table: nn.Embedding, bucket_rows: int = 128) -> torch.Tensor:
        """Rows are encoded in buckets of similar length, each cut to its longest row: lines
        and candidates vary from 3 to 40 tokens, so one padded block would be half padding."""
        lengths = ids.ne(PAD_ID).sum(1)
        order = torch.argsort(lengths, descending=True)
        out = torch.empty(len(ids), table.embedding_dim, dtype=table.weight.dtype, device=ids.device)
        for rows in order.split(bucket_rows):
            out[rows] = self._encode(ids[rows, : max(1, int(lengths[rows[0]]))], table)
        return out

    def _encode(self, ids: torch.Tensor, table: nn.Embedding) -> torch.Tensor:
        pad = ids.eq(PAD_ID)
        x = table(ids) + self.positions.weight[: ids.shape[1]]
        x = self.encoder(self.dropout(x), src_key_padding_mask=pad)
        keep = (~pad).unsqueeze(-1).to(x.dtype)
        return (x * keep).sum(1) / keep.sum(1).clamp_min(1.0)


# ---------------------------------------------------------------------------------- model
@register_model("light-memnet", description="Transformer Memory Network (Urbanek et al. 2019)")
class TransformerMemNet(NeuralRanker):
    """Transformer Memory Network ranker; see the module docstring for the architecture.

    The default sizes are the released model's, which trains on one shared CPU thread in about a
    quarter of an hour per task; on a GPU, raise ``dim``, ``layers`` and ``ffn_dim``.

    Args:
        dim: Width of the token embeddings and of both encoders.
        layers: Transformer layers of each encoder.
        heads: Attention heads (they divide ``dim``).
        ffn_dim: Feed-forward width of each layer.
        dropout: Dropout of the encoders.
        hops: Rounds of attention of the context over its memories.
        shared_candidate_encoder: Encode candidates with the context's encoder instead of their own.
        context_lines: The latest dialogue/action/emote lines that form the query.
        history_memories: Earlier such lines kept as memory slots.
        max_context_tokens: The query's budget, truncated from the left (the latest words are kept).
        max_memory_tokens: A memory slot's budget.
        max_candidate_tokens: A candidate's budget.
        max_memories: Memory slots per context.
        vocab_min_count: Times a word must occur in the train split to enter the vocabulary.
        vocab_size: The vocabulary's size, PAD and UNK included.
        learning_rate: AdamW's peak learning rate.
        weight_decay: AdamW's weight decay.
        warmup_steps: Steps of linear warm-up to ``learning_rate``.
        in_batch_negatives: Train each context also against the other examples' golds.
    """

    def __init__(self, dim: int = 128, layers: int = 1, heads: int = 4, ffn_dim: int = 256, dropout: float = 0.1,
                 hops: int = 1, shared_candidate_encoder: bool = False, context_lines: int = 3,
                 history_memories: int = 2, max_context_tokens: int = 64, max_memory_tokens: int = 40,
                 max_candidate_tokens: int = 24, max_memories: int = 12, vocab_min_count: int = 2,
                 vocab_size: int = 20_000, learning_rate: float = 1e-3, weight_decay: float = 0.01,
                 warmup_steps: int = 200, in_batch_negatives: bool = True) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.words: list[str] = [PAD, UNK]
        self._build_encoders()

    # -------------------------------------------------------------- vocabulary
    def _build_encoders(self) -> None:
        """(Re)create the token table for the current vocabulary and the encoders on it."""
        h = self.hparams
        self.word_ids = {w: i for i, w in enumerate(self.words)}
        self.token_embedding = nn.Embedding(len(self.words), h.dim, padding_idx=PAD_ID)
        nn.init.normal_(self.token_embedding.weight, std=h.dim ** -0.5)
        with torch.no_grad():
            self.token_embedding.weight[PAD_ID].zero_()
        max_len = max(h.max_context_tokens, h.max_memory_tokens, h.max_candidate_tokens)
        self.context_encoder = MemNetEncoder(h.dim, h.layers, h.heads, h.ffn_dim, h.dropout, max_len)
        self.reply_encoder = None if h.shared_candidate_encoder else MemNetEncoder(
            h.dim, h.layers, h.heads, h.ffn_dim, h.dropout, max_len)
        self._lines = LineCache(self._line_ids)

    def set_vocab(self, words: Sequence[str]) -> None:
        if list(words[:2]) != [PAD, UNK]:
            raise ValueError("a MemNet vocabulary starts with PAD and UNK")
        self.words = list(words)
        self._build_encoders()

    def setup_from_data(self, train: Any) -> None:
        """Build the vocabulary from the train split (deterministic: see :func:`build_vocab`)."""
        self.set_vocab(build_vocab(_training_texts(train), self.hparams.vocab_min_count, self.hparams.vocab_size))

    def save_extra_files(self, directory: Path) -> None:
        (directory / "vocab.json").write_text(json.dumps(self.words))

    def load_extra_files(self, directory: Path) -> None:
        self.set_vocab(read_json(directory / "vocab.json"))

    def encode_text(self, ids: torch.Tensor) -> torch.Tensor:
        """Memories and dialogue contexts ``[N, L]`` -> ``[N, d]``."""
        return self.context_encoder(ids, self.token_embedding)

    def encode_candidates(self, ids: torch.Tensor) -> torch.Tensor:
        """Candidates ``[N, L]`` -> ``[N, d]`` (the context encoder when shared)."""
        encoder = self.context_encoder if self.reply_encoder is None else self.reply_encoder
        return encoder(ids, self.token_embedding)

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """A Lightning checkpoint holds no vocab.json: check that the rebuilt one fits."""
        rows = checkpoint["state_dict"]["token_embedding.weight"].shape[0]
        if rows != len(self.words):
            raise ValueError(f"checkpoint has {rows} words but this model's vocabulary has {len(self.words)}; "
                             "call setup_from_data with the same train split first")

    # -------------------------------------------------------------- tokenisation
    def _line_ids(self, line: str) -> np.ndarray:
        get = self.word_ids.get
        return np.array([get(w, UNK_ID) for w in tokenize(line)], dtype=np.int64)

    def _text_ids(self, text: str, limit: int, keep_end: bool = False) -> np.ndarray:
        """Ids of a (possibly multi-line) text cut to ``limit`` tokens; an empty text is UNK."""
        parts = [self._lines(line) for line in text.split("\n")]
        ids = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        ids = ids[len(ids) - limit:] if keep_end and len(ids) > limit else ids[:limit]
        return ids if len(ids) else np.array([UNK_ID], dtype=np.int64)

    def collate(self, items: Sequence[LightItem]) -> dict[str, Any]:
        """Token tensors of a batch: contexts ``[B, L]``, all memories ``[N_mem, L]`` with
        their counts per example, all candidates ``[N_cand, L]`` with counts, the labels and
        the in-batch negative mask (``[B, B]``: may example i be scored against j's gold)."""
        h = self.hparams
        splits = [split_context(item.context, h.context_lines, h.history_memories) for item in items]
        memories = [s.memories[: h.max_memories] for s in splits]
        candidates = [list(item.candidates) for item in items]
        return {
            "context": _pad([self._text_ids("\n".join(s.dialogue), h.max_context_tokens, keep_end=True)
                             for s in splits]),
            "memories": _pad([self._text_ids(m, h.max_memory_tokens) for ms in memories for m in ms]),
            "memory_counts": torch.tensor([len(ms) for ms in memories], dtype=torch.long),
            "candidates": _pad([self._text_ids(c, h.max_candidate_tokens) for cs in candidates for c in cs]),
            "counts": torch.tensor([len(cs) for cs in candidates], dtype=torch.long),
            "labels": torch.tensor([item.label for item in items], dtype=torch.long),
            "negatives": _negative_mask(candidates, [item.label for item in items]),
        }

    # -------------------------------------------------------------- model
    def _attend(self, query: torch.Tensor, memories: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        """``hops`` rounds of ``q <- q + softmax(q·m / sqrt(d)) m`` over each example's memories;
        an example without memories keeps its query."""
        slots = _pad_rows(memories, counts)                                   # [B, M, d]
        present = torch.arange(slots.shape[1], device=counts.device)[None] < counts[:, None]
        scale = 1.0 / math.sqrt(query.shape[-1])
        for _ in range(self.hparams.hops):
            logits = torch.einsum("bd,bmd->bm", query, slots) * scale
            weights = torch.softmax(logits.masked_fill(~present, float("-inf")), -1)
            weights = torch.nan_to_num(weights, nan=0.0)
            query = query + torch.einsum("bm,bmd->bd", weights, slots)
        return query

    def encode_context_batch(self, batch: dict[str, Any]) -> torch.Tensor:
        """Context vectors ``[B, d]`` after attending over the memories."""
        query = self.encode_text(batch["context"])
        if batch["memories"].shape[0] == 0 or int(batch["memory_counts"].sum()) == 0:
            return query
        return self._attend(query, self.encode_text(batch["memories"]), batch["memory_counts"])

    def _scores(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        contexts = self.encode_context_batch(batch)
        candidates = self.encode_candidates(batch["candidates"])
        counts = batch["counts"]
        owner = candidate_owner(counts)
        scores = pad_candidate_scores((contexts[owner] * candidates).sum(-1), counts)
        return scores, contexts, candidates

    def forward(self, batch: dict[str, Any]) -> torch.Tensor:
        """Scores ``[B, C_max]`` of each example's candidates (``-inf`` padding)."""
        return self._scores(batch)[0]

    def training_scores(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        """Own candidates, then (with ``in_batch_negatives``) the other examples' golds."""
        scores, contexts, candidates = self._scores(batch)
        if not self.hparams.in_batch_negatives or len(batch["labels"]) < 2:
            return scores, batch["labels"]
        counts = batch["counts"]
        golds = candidates[(torch.cumsum(counts, 0) - counts) + batch["labels"]]
        extra = (contexts @ golds.T).masked_fill(~batch["negatives"], float("-inf"))
        return torch.cat([scores, extra], 1), batch["labels"]

    def configure_optimizers(self):
        """AdamW with a linear warm-up: a transformer trained from scratch diverges early on
        without one."""
        optimizer = torch.optim.AdamW(self.parameters(), lr=self.hparams.learning_rate,
                                      weight_decay=self.hparams.weight_decay)
        warmup = max(1, self.hparams.warmup_steps)
        schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / warmup))
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": schedule, "interval": "step"}}


def _pad_rows(vectors: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """Flat per-example vectors ``[N, d]`` (``counts[i]`` of them for example i) -> ``[B, M_max, d]``."""
    width = int(counts.max()) if len(counts) else 0
    owner = candidate_owner(counts)
    column = torch.arange(len(owner), device=counts.device) - (torch.cumsum(counts, 0) - counts)[owner]
    out = vectors.new_zeros(len(counts), width, vectors.shape[-1])
    out[owner, column] = vectors
    return out


def _negative_mask(candidates: Sequence[Sequence[str]], labels: Sequence[int]) -> torch.Tensor:
    """``[B, B]``: True where example j's gold may serve as a negative for example i (j != i
    and the string is not one of i's own candidates, which are scored already)."""
    golds = [cands[label] for cands, label in zip(candidates, labels)]
    own = [set(cands) for cands in candidates]
    return torch.tensor([[i != j and golds[j] not in own[i] for j in range(len(golds))] for i in range(len(golds))],
                        dtype=torch.bool)
