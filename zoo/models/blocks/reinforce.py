"""REINFORCE (the paper's Table 2 baseline): the bandit's update on the reward-to-go."""

from __future__ import annotations

import torch

from zoo.models.blocks.bandit import BlocksBandit
from zoo.models.blocks.experience import SampledRollout
from zoo.models.blocks.policy import register_objective


@register_objective("reinforce", "CNN-LSTM block policy trained by REINFORCE; pass the vocabulary")
class BlocksReinforce(BlocksBandit):
    """The contextual bandit with each decision weighted by the return from it on (the sum
    of its own and all later rewards of its episode) instead of its immediate reward."""

    def rollout_targets(self, rollout: SampledRollout, rows: torch.Tensor) -> torch.Tensor:
        return rollout.returns[rows]
