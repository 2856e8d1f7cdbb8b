"""Ensembles of Blocks policies: the paper's Table 3 averages action probabilities."""

from __future__ import annotations

from typing import Sequence

import torch
from torch import nn

from zoo.blocks.observation import BlocksObservation
from zoo.grounded import Grounded


class PolicyEnsemble(Grounded):
    domain = "blocks"
    """Scores actions by the mean of its members' action probabilities.

    Each member tokenises the instruction with its own vocabulary, so policies trained
    separately (different seeds, different data orders) can be combined.
    """

    def __init__(self, policies: Sequence[Grounded]):
        super().__init__()
        if not policies:
            raise ValueError("an ensemble needs at least one policy")
        self.members = nn.ModuleList(policies)
        self.needs_images = any(getattr(p, "needs_images", True) for p in policies)
        self.needs_demonstrations = any(getattr(p, "needs_demonstrations", False) for p in policies)

    def score(self, observations: BlocksObservation, candidates=None) -> torch.Tensor:
        return torch.stack([member.score(observations) for member in self.members]).mean(dim=0)
