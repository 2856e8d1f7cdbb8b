"""Supervised learning from demonstrations (the paper's Table 2, "Supervised")."""

from __future__ import annotations

import torch

from zoo.models.blocks.policy import BlocksPolicy, register_objective


@register_objective("supervised", "CNN-LSTM block policy trained on demonstrations (Misra et al. 2017); pass the vocabulary")
class BlocksSupervised(BlocksPolicy):
    """Maximum likelihood of the shortest-path demonstrations' actions."""

    def training_step(self, batch: dict, batch_idx: int) -> torch.Tensor:
        loss = self.supervised_step(batch, "train")
        self.log("train/loss", loss, prog_bar=True, batch_size=len(batch["action"]))
        return loss
