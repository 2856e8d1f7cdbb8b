"""The Blocks simulator (docs/blocks_environment.md §2), vectorised over a batch of episodes.

One :meth:`BlocksEnv.step` moves one block in every unfinished episode with a handful of
tensor operations: no Python loop over episodes, so thousands of boards step at once and the
same code runs on a GPU next to the policy. Rewards are computed by :mod:`zoo.blocks.reward`
from what a step reports.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from zoo.blocks.board import BoardBatch, distance_error
from zoo.blocks.geometry import BOARD_HALF, DIRECTION_DELTAS, HORIZON, MAX_BLOCKS, STOP, squares_overlap


@dataclass(frozen=True)
class StepOutcome:
    """What one step did, per episode. Episodes already finished are untouched (``acted`` False)."""

    previous: torch.Tensor  # [B, 20, 2] positions before the step
    positions: torch.Tensor  # [B, 20, 2] positions after the step
    acted: torch.Tensor  # [B] the episode was running and took this action
    stopped: torch.Tensor  # [B] the action was STOP
    failed: torch.Tensor  # [B] a move that left the board or collided (state unchanged)
    done: torch.Tensor  # [B] the episode has ended (STOP or horizon), now or before


def apply_moves(positions: torch.Tensor, n_blocks: torch.Tensor, actions: torch.Tensor):
    """Pure transition function: new positions and a failure flag for each episode.

    A move fails if the target centre leaves [-1.25, 1.25]^2 or the block's square would
    overlap another present block (0.002 tolerance). Moving an absent block (id >= n_blocks)
    is a successful no-op, as in the original player. STOP changes nothing.
    """
    batch = torch.arange(positions.shape[0], device=positions.device)
    is_move = actions != STOP
    block = torch.where(is_move, actions // 4, 0)
    direction = torch.where(is_move, actions % 4, 0)
    present = block < n_blocks
    current = positions[batch, block]
    target = current + DIRECTION_DELTAS.to(positions)[direction]
    off_board = (target.abs() > BOARD_HALF).any(dim=-1)
    others = torch.arange(MAX_BLOCKS, device=positions.device)
    obstacle = (others < n_blocks[:, None]) & (others != block[:, None])
    collides = (squares_overlap(target, positions) & obstacle).any(dim=-1)
    failed = is_move & present & (off_board | collides)
    moves = is_move & present & ~failed
    updated = positions.clone()
    updated[batch, block] = torch.where(moves[:, None], target, current)
    return updated, failed


class BlocksEnv:
    """A batch of Blocks episodes being played.

    >>> env = BlocksEnv(); env.reset(BoardBatch.from_transitions(split.transitions[:8]))
    >>> outcome = env.step(torch.full((8,), STOP))
    """

    def __init__(self, horizon: int = HORIZON):
        self.horizon = horizon
        self.boards: BoardBatch | None = None

    def reset(self, boards: BoardBatch) -> None:
        self.boards = boards
        size = len(boards)
        device = boards.start.device
        self.positions = boards.start.clone()
        self.moves_taken = torch.zeros(size, dtype=torch.long, device=device)
        self.done = torch.zeros(size, dtype=torch.bool, device=device)
        self.previous_action = torch.full((size,), -1, dtype=torch.long, device=device)
        self.min_error = self.error()

    def error(self) -> torch.Tensor:
        """Current distance error of every episode, in block lengths."""
        return distance_error(self.positions, self.boards.goal)

    def step(self, actions: torch.Tensor) -> StepOutcome:
        if self.boards is None:
            raise RuntimeError("call reset() before step()")
        actions = torch.as_tensor(actions, dtype=torch.long, device=self.positions.device)
        if actions.shape != self.done.shape:
            raise ValueError(f"expected {tuple(self.done.shape)} actions, got {tuple(actions.shape)}")
        if ((actions < 0) | (actions > STOP)).any():
            raise ValueError(f"actions must lie in 0..{STOP}")
        acted = ~self.done
        moved, failed = apply_moves(self.positions, self.boards.n_blocks, actions)
        previous = self.positions
        self.positions = torch.where(acted[:, None, None], moved, previous)
        failed = failed & acted
        stopped = acted & (actions == STOP)
        self.moves_taken = self.moves_taken + (acted & ~stopped)
        self.done = self.done | stopped | (self.moves_taken >= self.horizon)
        self.previous_action = torch.where(acted, actions, self.previous_action)
        self.min_error = torch.minimum(self.min_error, self.error())
        return StepOutcome(previous, self.positions, acted, stopped, failed, self.done.clone())

    @property
    def stopped(self) -> torch.Tensor:
        """[B] episodes that ended by STOP, not by reaching the horizon."""
        return self.done & (self.moves_taken < self.horizon)

    @property
    def all_done(self) -> bool:
        return bool(self.done.all())
