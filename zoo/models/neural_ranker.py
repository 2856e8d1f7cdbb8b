"""``NeuralRanker``: what every trained LIGHT ranker shares (StarSpace, MemNet, bi/cross-rankers).

A subclass says how to turn :class:`~zoo.light.items.LightItem` lists into tensors
(``collate``) and how to score a batch (``forward``: ``[B, C_max]`` scores, ``-inf`` in the
padding of shorter candidate lists). This base turns that into a Lightning model:

* training: softmax cross-entropy of the gold among the scored candidates
  (``training_scores`` may widen the candidate set, e.g. with in-batch negatives);
* validation and test: R@1 (the paper's R@1/20 for dialogue, accuracy for action and emote)
  and MRR as torchmetrics objects, so under DDP they are reduced over all ranks: the figure
  is R@1 over the whole split, not an average of per-rank figures. Test has two loaders, seen
  (``test/...``) and unseen (``test_unseen/...``);
* inference: ``score`` / ``rank`` without a Trainer, in chunks of ``inference_batch_size``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from zoo.light.items import LightItem
from zoo.light.metrics import MeanReciprocalRank, RecallAtK
from zoo.models.light_ranker import LightRanker

TEST_SPLITS = ("test", "test_unseen")


def candidate_owner(counts: torch.Tensor) -> torch.Tensor:
    """The example each candidate of a flattened batch belongs to (``counts[i]`` candidates
    of example ``i``, in order): ``[0, 0, 1, 1, 1, ...]``."""
    return torch.repeat_interleave(torch.arange(len(counts), device=counts.device), counts)


def pad_candidate_scores(flat_scores: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """Scatter per-candidate scores of a flattened batch into ``[B, C_max]`` (``-inf`` padding).

    ``counts[i]`` is how many of the ``flat_scores`` belong to example ``i``, in order.
    """
    owner = candidate_owner(counts)
    column = torch.arange(len(owner), device=counts.device) - (torch.cumsum(counts, 0) - counts)[owner]
    width = int(counts.max()) if len(counts) else 0
    out = flat_scores.new_full((len(counts), width), float("-inf"))
    out[owner, column] = flat_scores
    return out


class NeuralRanker(LightRanker):
    """Base of LIGHT rankers trained with Lightning; see the module docstring.

    Subclasses implement ``collate(items) -> dict`` (with ``labels``: the gold's index in
    each example's candidates) and ``forward(batch) -> [B, C_max]`` scores, and call
    ``self.save_hyperparameters()`` with at least ``learning_rate``.
    """

    inference_batch_size = 64

    def __init__(self) -> None:
        super().__init__()
        self.valid_metrics = self._metrics()
        self.test_metrics = nn.ModuleList([self._metrics() for _ in TEST_SPLITS])

    @staticmethod
    def _metrics() -> nn.ModuleDict:
        return nn.ModuleDict({"r_at_1": RecallAtK(1), "mrr": MeanReciprocalRank()})

    # ------------------------------------------------------------------ subclass API
    def collate(self, items: Sequence[LightItem]) -> dict[str, Any]:
        raise NotImplementedError

    def forward(self, batch: dict[str, Any]) -> torch.Tensor:
        raise NotImplementedError

    def training_scores(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        """Scores and targets of the training loss; default: each example's own candidates."""
        return self(batch), batch["labels"]

    def setup_from_data(self, train: Any) -> None:
        """Called by the recipe once before training with the train split's
        :class:`~zoo.light.datamodule.LightDataset` (e.g. to build a vocabulary). Must be
        deterministic: under DDP every rank calls it and must end with the same model."""

    # ------------------------------------------------------------------ inference
    def score_lists(self, contexts: Sequence[str], candidates: Sequence[Sequence[str]]) -> list[torch.Tensor]:
        rows: list[torch.Tensor] = []
        was_training = self.training
        self.eval()
        with torch.no_grad():
            for start in range(0, len(contexts), self.inference_batch_size):
                stop = start + self.inference_batch_size
                items = [LightItem(context, tuple(cands), 0, None)  # type: ignore[arg-type]
                         for context, cands in zip(contexts[start:stop], candidates[start:stop])]
                scores = self(self.transfer_batch_to_device(self.collate(items), self.device, 0)).float().cpu()
                rows.extend(scores[i, : len(c)] for i, c in enumerate(candidates[start:stop]))
        self.train(was_training)
        return rows

    # ------------------------------------------------------------------ Lightning
    def training_step(self, batch: dict[str, Any], batch_idx: int) -> torch.Tensor:
        scores, targets = self.training_scores(batch)
        loss = F.cross_entropy(scores.float(), targets)
        self.log("train/loss", loss, prog_bar=True, batch_size=len(targets))
        return loss

    def _update(self, metrics: nn.ModuleDict, prefix: str, batch: dict[str, Any]) -> None:
        scores, labels = self(batch).float(), batch["labels"]
        for name, metric in metrics.items():
            metric.update(scores, labels)
            self.log(f"{prefix}/{name}", metric, on_step=False, on_epoch=True, prog_bar=name == "r_at_1",
                     batch_size=len(labels), add_dataloader_idx=False)

    def validation_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        self._update(self.valid_metrics, "valid", batch)

    def test_step(self, batch: dict[str, Any], batch_idx: int, dataloader_idx: int = 0) -> None:
        self._update(self.test_metrics[dataloader_idx], TEST_SPLITS[dataloader_idx], batch)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=self.hparams.learning_rate,
                                 weight_decay=self.hparams.get("weight_decay", 0.0))
