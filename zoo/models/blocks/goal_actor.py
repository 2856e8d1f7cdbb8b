"""The action generator of the goal policy: which way to move a named block, or STOP, so that it
ends where a marked goal is.

Reading the instruction and acting on it are separate skills (Misra et al., EMNLP 2018): once a
reader has said which block moves and where to (:mod:`zoo.models.blocks.goal`), what is left
is a controller that sees the board and a mark on it. The actor's input is the current frame
(its three colour channels as the policy's stack standardises them), a goal channel holding a
small Gaussian bump around the goal's cell, and two coordinate channels; the block to move
enters as feature-wise scales and shifts of every convolution (FiLM), so the same filters find
whichever block is named. It never reads the words, so it can be trained on any goal (the
demonstrations' true goals) and then follow the goals a reader predicts.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from zoo.blocks.geometry import MAX_BLOCKS, NUM_DIRECTIONS
from zoo.blocks.goals import MAP_CELLS
from zoo.blocks.render import IMAGE_SIZE

MARK_SIGMA = 2.0
"""Width (pixels) of the goal mark's Gaussian: about a quarter of a block, so the mark is one
place on the board yet spans more than one pixel for the first convolution."""


def goal_marks(cells: torch.Tensor, size: int = IMAGE_SIZE, cells_per_side: int = MAP_CELLS,
               sigma: float = MARK_SIGMA) -> torch.Tensor:
    """A [N, 1, size, size] channel per goal cell (row-major indices on the goal map): a
    Gaussian bump of height 1 around the cell's centre, in image pixels."""
    per_cell = size / cells_per_side
    row = (cells // cells_per_side).float().add(0.5).mul(per_cell)
    column = (cells % cells_per_side).float().add(0.5).mul(per_cell)
    axis = torch.arange(size, dtype=torch.float32, device=cells.device) + 0.5
    rows = (axis[None, :] - row[:, None]).square()  # [N, size]
    columns = (axis[None, :] - column[:, None]).square()
    return torch.exp(-(rows[:, :, None] + columns[:, None, :]) / (2 * sigma**2)).unsqueeze(1)


class GoalActor(nn.Module):
    """Current frame, goal mark and block -> log-probabilities of the 4 directions and STOP [B, 5]."""

    def __init__(self, channels: int = 32, hidden: int = 256):
        super().__init__()
        from zoo.models.blocks.goal import coordinate_channels

        self.register_buffer("coordinates", coordinate_channels(IMAGE_SIZE), persistent=False)
        # 120 -> 60 -> 30 -> 15 -> 8
        self.convolutions = nn.ModuleList([nn.Conv2d(3 + 1 + 2, channels, 5, stride=2, padding=2)]
                                          + [nn.Conv2d(channels, channels, 3, stride=2, padding=1) for _ in range(3)])
        self.block_film = nn.ModuleList(nn.Embedding(MAX_BLOCKS, 2 * channels) for _ in self.convolutions)
        for film in self.block_film:  # start as the identity: scale 1, shift 0
            nn.init.zeros_(film.weight)
        side = IMAGE_SIZE
        for _ in self.convolutions:
            side = (side + 1) // 2
        self.head = nn.Sequential(nn.Linear(channels * side * side, hidden), nn.ReLU(), nn.Linear(hidden, NUM_DIRECTIONS + 1))

    def forward(self, frames: torch.Tensor, cells: torch.Tensor, blocks: torch.Tensor) -> torch.Tensor:
        """``frames`` [B, 3, H, W] standardised, ``cells`` [B] goal cells, ``blocks`` [B]."""
        marks = goal_marks(cells.to(frames.device))
        features = torch.cat([frames, marks.to(frames.dtype), self.coordinates.expand(len(frames), -1, -1, -1)
                              .to(frames.dtype)], dim=1)
        blocks = blocks.to(frames.device)
        for convolution, film in zip(self.convolutions, self.block_film):
            scale, shift = film(blocks).chunk(2, dim=-1)
            features = convolution(features)
            features = F.relu(features * (1 + scale[:, :, None, None]) + shift[:, :, None, None])
        return self.head(features.flatten(1)).log_softmax(-1)
