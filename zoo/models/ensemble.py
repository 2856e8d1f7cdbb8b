"""Ensembles of Blocks policies: the paper's Table 3 averages action probabilities."""

from __future__ import annotations

from typing import Sequence

import torch
from torch import nn

from zoo.blocks.observation import BlocksObservation
from zoo.models.blocks_agent import BlocksAgent


class PolicyEnsemble(BlocksAgent):
    """Acts by the mean of its members' action probabilities.

    Each member tokenises the instruction with its own vocabulary, so policies trained
    separately (different seeds, different data orders) can be combined.
    """

    def __init__(self, policies: Sequence[BlocksAgent]):
        super().__init__()
        if not policies:
            raise ValueError("an ensemble needs at least one policy")
        self.members = nn.ModuleList(policies)
        self.needs_images = any(getattr(p, "needs_images", True) for p in policies)
        self.needs_demonstrations = any(getattr(p, "needs_demonstrations", False) for p in policies)

    def action_probabilities(self, observation: BlocksObservation) -> torch.Tensor:
        return torch.stack([member.action_probabilities(observation) for member in self.members]).mean(dim=0)
