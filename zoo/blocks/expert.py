"""The shortest-path expert at any board: what the demonstrations would do from here.

The demonstrations (:mod:`zoo.blocks.demos`) only say what to do on their own path. A learner
that imitates them on the states *it* visits (DAgger, Ross et al. 2011) needs the expert's
action everywhere: after a detour, after a wrong block moved, after a failed move. The expert
here is the demonstrations' planner run from the board as it stands: the target block (the
one the episode moves) takes the next step of a shortest path to the reachable cell of its
lattice nearest its goal, around the other blocks where they are now, and STOPs there.

Cheap because the search is done backwards, once: a breadth-first distance field from the
end cell gives the remaining moves from every cell of the target block's component, so the
expert's action at any position is a neighbour one step closer. A field is recomputed only
when an obstacle moved (or the block stands outside the component it was computed for);
moves of the target block itself just read the field.

The end is the nearest cell reachable within the moves the episode has left, as the
demonstrations choose it within 40 moves of the start. A field stays valid while its end is
still within the moves left: the cells reachable from here in the moves left are a subset of
those reachable from where it was computed (the block moved at most as many steps as actions
were taken since), so the end is still their nearest. One difference from the demonstrations,
a rule of the simulator: cells whose centre leaves the board are not reachable (the planner
did not test the board; no real demonstration goes off it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from zoo.blocks.board import BoardBatch
from zoo.blocks.demos import (
    LATTICE_RADIUS,
    LATTICE_STEPS,
    blocked_cells,
    breadth_first_depth,
    goal_gaps,
    lattice,
    nearest_reachable_cell,
)
from zoo.blocks.geometry import BOARD_HALF, HORIZON, NUM_ACTIONS, NUM_DIRECTIONS, STEP, STOP


@dataclass(frozen=True)
class DistanceField:
    """Remaining moves to the end cell from every cell of one component (-1 elsewhere)."""

    obstacles: bytes  # the other blocks' positions it was computed for
    opened: tuple[int, int] | None  # a cell overlapping an obstacle, let free because the block stood on it
    end: tuple[int, int]
    remaining: np.ndarray  # [I, J] int64


class EpisodeExpert:
    """The expert of one episode: its target block's lattice, goal and current distance field."""

    def __init__(self, start: np.ndarray, goal: np.ndarray, block: int, n_blocks: int):
        self.block, self.n_blocks = block, n_blocks
        self.origin = np.asarray(start[block], dtype=np.float64)
        self.cell_x, self.cell_z = lattice(self.origin)
        self.gap = goal_gaps(self.cell_x, self.cell_z, np.asarray(goal[block], dtype=np.float64))
        self.off_board = (np.abs(self.cell_x)[:, None] > BOARD_HALF) | (np.abs(self.cell_z)[None, :] > BOARD_HALF)
        self.field: DistanceField | None = None
        self.searches = 0  # distance fields computed, for the cost accounting of callers

    def cell(self, positions: np.ndarray) -> tuple[int, int]:
        """Lattice index of the target block in ``positions`` [n, 2]."""
        offset = np.rint((positions[self.block] - self.origin) / STEP).astype(np.int64) + LATTICE_RADIUS
        i, j = int(offset[0]), int(offset[1])
        if not (0 <= i < len(self.cell_x) and 0 <= j < len(self.cell_z)):
            raise ValueError(f"block {self.block} is more than {LATTICE_RADIUS} steps from its start")
        return i, j

    def field_at(self, positions: np.ndarray, moves_left: int) -> tuple[DistanceField, tuple[int, int]]:
        """The distance field valid for ``positions`` [n, 2] with ``moves_left`` actions left
        (computed if the last one is not)."""
        positions = np.asarray(positions[: self.n_blocks], dtype=np.float64)
        here = self.cell(positions)
        obstacles = np.delete(positions, self.block, axis=0)
        key = obstacles.tobytes()
        field = self.field
        stale = (field is None or field.obstacles != key or field.opened not in (None, here)
                 or not 0 <= field.remaining[here] <= moves_left)
        if stale:
            field = self.field = self._search(obstacles, key, here, moves_left)
        return field, here

    def _search(self, obstacles: np.ndarray, key: bytes, here: tuple[int, int], moves_left: int) -> DistanceField:
        self.searches += 1
        blocked = blocked_cells(self.cell_x, self.cell_z, obstacles) | self.off_board
        opened = here if blocked[here] else None  # standing on an overlap (real data has shallow ones): moves out work
        blocked[here] = False
        end = nearest_reachable_cell(breadth_first_depth(blocked, here, max(moves_left, 0)), self.gap)
        remaining = breadth_first_depth(blocked, end)  # from every cell of the component
        return DistanceField(key, opened, end, remaining)

    def optimal_directions(self, positions: np.ndarray, moves_left: int) -> tuple[int, list[int]]:
        """Remaining moves from ``positions`` and every direction that takes one step off them
        (empty at the end cell, where the expert STOPs)."""
        field, (i, j) = self.field_at(positions, moves_left)
        remaining = int(field.remaining[i, j])
        if remaining == 0:
            return 0, []
        size = field.remaining.shape
        best = []
        for direction, (di, dj) in enumerate(LATTICE_STEPS):
            ni, nj = i + di, j + dj
            if 0 <= ni < size[0] and 0 <= nj < size[1] and field.remaining[ni, nj] == remaining - 1:
                best.append(direction)
        return remaining, best


class BlocksExpert:
    """The expert of a batch of episodes: actions, remaining moves and all optimal actions at
    any boards of those episodes.

    >>> expert = BlocksExpert(boards)            # once per batch of episodes
    >>> actions = expert.act(env.positions, env.moves_taken)   # [B], at every step, whatever was played

    ``moves_taken`` (non-STOP actions so far, as :class:`~zoo.blocks.env.BlocksEnv` counts
    them) sets the moves left before the ``horizon``.
    """

    def __init__(self, boards: BoardBatch, horizon: int = HORIZON):
        self.horizon = horizon
        start, goal = boards.start.cpu().numpy(), boards.goal.cpu().numpy()
        blocks, counts = boards.main_block.tolist(), boards.n_blocks.tolist()
        self.episodes = [EpisodeExpert(start[b], goal[b], blocks[b], counts[b]) for b in range(len(boards))]

    @classmethod
    def from_transitions(cls, transitions: Sequence, horizon: int = HORIZON) -> "BlocksExpert":
        return cls(BoardBatch.from_transitions(transitions), horizon)

    def __len__(self) -> int:
        return len(self.episodes)

    @property
    def searches(self) -> int:
        """Distance fields computed so far, over all episodes."""
        return sum(e.searches for e in self.episodes)

    def _decide(self, positions: torch.Tensor, moves_taken, episodes: torch.Tensor | None):
        board = positions.detach().cpu().numpy()
        taken = torch.as_tensor(moves_taken).expand(len(board)).tolist()
        rows = range(len(board)) if episodes is None else episodes.tolist()
        if len(rows) != len(board):
            raise ValueError(f"{len(board)} boards for {len(rows)} episodes")
        return [self.episodes[r].optimal_directions(board[k], self.horizon - taken[k]) + (self.episodes[r].block,)
                for k, r in enumerate(rows)]

    def act(self, positions: torch.Tensor, moves_taken, episodes: torch.Tensor | None = None) -> torch.Tensor:
        """The expert's action [N] on boards ``positions`` [N, 20, 2] of ``episodes`` (default:
        all, in order) after ``moves_taken`` [N] (or one int for all): the first optimal move
        (lowest direction id), STOP at the end cell."""
        decisions = self._decide(positions, moves_taken, episodes)
        actions = [STOP if not best else NUM_DIRECTIONS * block + best[0] for _, best, block in decisions]
        return torch.tensor(actions, dtype=torch.long, device=positions.device)

    def remaining(self, positions: torch.Tensor, moves_taken, episodes: torch.Tensor | None = None) -> torch.Tensor:
        """Moves the expert still makes from ``positions`` before its STOP [N]."""
        return torch.tensor([left for left, _, _ in self._decide(positions, moves_taken, episodes)], dtype=torch.long)

    def optimal_actions(self, positions: torch.Tensor, moves_taken, episodes: torch.Tensor | None = None) -> torch.Tensor:
        """[N, 81] mask of every action on a shortest path (STOP alone at the end cell)."""
        decisions = self._decide(positions, moves_taken, episodes)
        mask = torch.zeros(len(decisions), NUM_ACTIONS, dtype=torch.bool)
        for row, (_, best, block) in enumerate(decisions):
            if best:
                mask[row, [NUM_DIRECTIONS * block + d for d in best]] = True
            else:
                mask[row, STOP] = True
        return mask
