"""The action generator of the goal policy: which way to move a named block, or STOP, so that it
ends where a marked goal is.

Reading the instruction and acting on it are separate skills (Misra et al., EMNLP 2018): once a
reader has said which block moves and where to (:mod:`zoo.models.blocks.goal`), what is left
is a controller that sees the board and a mark on it. The actor reads the current frame (with
coordinate channels and a channel holding a small Gaussian bump around the goal's cell) with
a LingUNet layout like the reader's (coarser: acting runs it at every step), its 1x1 kernels computed from the named block's embedding instead
of the words, and decodes a coarser map of where that block stands now. That map is supervised (the
block's cell in every training frame), which teaches the filters to find a block by its face
far sooner than the direction labels alone would; the direction comes from where the map puts
the block, where the goal is, and the deepest features (what stands in the way).

It never reads the words, so it can be trained on any goal (the demonstrations' true goals) and
then follow the goals a reader predicts.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from zoo.blocks.geometry import MAX_BLOCKS, NUM_DIRECTIONS
from zoo.blocks.goals import MAP_CELLS
from zoo.blocks.render import IMAGE_SIZE

LOCATION_CELLS = MAP_CELLS // 2
"""Cells per side of the actor's map of where the block stands (its first level, 30x30): half a
block length each; the expected place under the map's softmax is finer than a cell. Reading the
frame at stride 4, as the paper's first layer does, makes a step of 256 episodes 1.5 s on one
CPU thread of a loaded 2-core AMD EPYC, against 7.0 s at stride 2 with a decoder back to 60x60."""

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
    rows = torch.exp(-(axis[None, :] - row[:, None]).square() / (2 * sigma**2))  # [N, size]
    columns = torch.exp(-(axis[None, :] - column[:, None]).square() / (2 * sigma**2))
    return (rows[:, :, None] * columns[:, None, :]).unsqueeze(1)  # separable: 2·size exponentials per mark


def cell_coordinates(cells: torch.Tensor, cells_per_side: int = MAP_CELLS) -> torch.Tensor:
    """Each cell's centre as (column, row) scaled to [-1, 1], [N, 2]."""
    row, column = cells // cells_per_side, cells % cells_per_side
    return (torch.stack([column, row], dim=-1).float() + 0.5) * (2.0 / cells_per_side) - 1.0


class GoalActor(nn.Module):
    """Current frame, goal cell and block -> (log-probabilities of the 4 directions and STOP [B, 5],
    the block's location logits [B, LOCATION_CELLS²])."""

    def __init__(self, channels: int = 32, levels: int = 3, block_dim: int = 32, hidden: int = 128):
        super().__init__()
        from zoo.models.blocks.goal import TextKernels, coordinate_channels

        self.register_buffer("coordinates", coordinate_channels(IMAGE_SIZE), persistent=False)
        self.register_buffer("cell_grid", cell_coordinates(torch.arange(LOCATION_CELLS**2), LOCATION_CELLS),
                             persistent=False)
        self.block = nn.Embedding(MAX_BLOCKS, block_dim)
        # 120 -> 30 (8x8, stride 4, the paper's first layer), then halving: 15, 8.
        self.encoder = nn.ModuleList(
            [nn.Conv2d(3 + 1 + 2, channels, 8, stride=4, padding=2)]
            + [nn.Conv2d(channels, channels, 3, stride=2, padding=1) for _ in range(levels - 1)])
        self.block_kernels = nn.ModuleList(TextKernels(block_dim, channels) for _ in range(levels))
        self.decoder = nn.ModuleList(nn.ConvTranspose2d(channels if step == 0 else 2 * channels, channels, 3, stride=2,
                                                        padding=1) for step in range(levels - 1))
        self.location_scores = nn.Conv2d(2 * channels, 1, 1)
        self.direction_head = nn.Sequential(nn.Linear(6 + 2 * channels, hidden), nn.ReLU(),
                                            nn.Linear(hidden, NUM_DIRECTIONS + 1))

    def forward(self, frames: torch.Tensor, cells: torch.Tensor, blocks: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """``frames`` [B, 3, H, W] standardised, ``cells`` [B] goal cells, ``blocks`` [B]."""
        from zoo.models.blocks.goal import decoded

        cells, blocks = cells.to(frames.device), blocks.to(frames.device)
        marks = goal_marks(cells).to(frames.dtype)
        features = torch.cat([frames, marks, self.coordinates.expand(len(frames), -1, -1, -1).to(frames.dtype)], dim=1)
        features = features.contiguous(memory_format=torch.channels_last)  # 2.4x faster first convolution on a CPU
        block = self.block(blocks)
        levels = []
        for convolution in self.encoder:
            features = F.leaky_relu(convolution(features))
            levels.append(features)
        filtered = [kernels(level, block) for kernels, level in zip(self.block_kernels, levels)]
        location = self.location_scores(decoded(filtered, self.decoder)).flatten(1)
        where = location.float().softmax(-1) @ self.cell_grid  # the block's expected (column, row), [B, 2]
        goal = cell_coordinates(cells).to(where.device)
        summary = torch.cat([where, goal, goal - where, levels[-1].mean(dim=(2, 3)).float(),
                             filtered[-1].mean(dim=(2, 3)).float()], dim=1)
        return self.direction_head(summary).log_softmax(-1), location
