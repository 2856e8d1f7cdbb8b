"""A batch of Blocks episodes as padded tensors: what the simulator, renderer and reward share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from zoo.blocks.geometry import BLOCK_SIZE, MAX_BLOCKS
from zoo.blocks.records import Transition


@dataclass(frozen=True)
class BoardBatch:
    """Start and goal boards of ``B`` episodes, padded to 20 blocks.

    Padding blocks sit at the origin in both start and goal, so they never add distance;
    ``n_blocks`` says which blocks exist (the original simulator kept absent cubes hidden).
    """

    start: torch.Tensor  # [B, 20, 2] float64, JSON frame (x, z)
    goal: torch.Tensor  # [B, 20, 2]
    n_blocks: torch.Tensor  # [B] long
    logo: torch.Tensor  # [B] bool, decoration == "logo"
    main_block: torch.Tensor  # [B] long, the block that moves from start to goal

    @classmethod
    def from_transitions(cls, transitions: Sequence[Transition], device: str | torch.device = "cpu") -> "BoardBatch":
        size = len(transitions)
        start = np.zeros((size, MAX_BLOCKS, 2))
        goal = np.zeros((size, MAX_BLOCKS, 2))
        for row, transition in enumerate(transitions):
            start[row, : transition.n_blocks] = transition.start
            goal[row, : transition.n_blocks] = transition.goal
        as_long = lambda values: torch.tensor(values, dtype=torch.long, device=device)  # noqa: E731
        return cls(
            start=torch.from_numpy(start).to(device),
            goal=torch.from_numpy(goal).to(device),
            n_blocks=as_long([t.n_blocks for t in transitions]),
            logo=torch.tensor([t.decoration == "logo" for t in transitions], device=device),
            main_block=as_long([t.moved_block for t in transitions]),
        )

    def __len__(self) -> int:
        return self.start.shape[0]

    @property
    def present(self) -> torch.Tensor:
        """[B, 20] mask of the blocks that exist in each episode."""
        return torch.arange(MAX_BLOCKS, device=self.n_blocks.device) < self.n_blocks[:, None]


def total_distance(positions: torch.Tensor, goal: torch.Tensor) -> torch.Tensor:
    """D(s): sum over blocks of the 2-D distance to the goal, in world units. [B]"""
    return (positions - goal).norm(dim=-1).sum(dim=-1)


def distance_error(positions: torch.Tensor, goal: torch.Tensor, block_size: float = BLOCK_SIZE) -> torch.Tensor:
    """The paper's metric (Bisk et al.): total distance to the goal in block lengths. [B]"""
    return total_distance(positions, goal) / block_size
