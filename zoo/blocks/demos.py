"""Shortest-path demonstrations (docs/blocks_environment.md §3): what the oracle does and what F2 advice follows.

The original planner ran A* over an 81×81 lattice of 0.1-unit steps centred on the moved
block's start, with the other blocks as obstacles, and ended on the reachable lattice cell
closest to the goal. The goal itself is rarely on the lattice, which is why even the oracle
ends 0.35 block lengths away. Because every step costs the same, breadth-first distances give
the same shortest paths as A*; the search is a few array dilations per transition.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
import torch

from zoo.blocks.geometry import COLLISION_EXTENT, HORIZON, NUM_DIRECTIONS, STEP, STOP
from zoo.blocks.records import Transition

LATTICE_RADIUS = 40
"""Cells span start ± 40 steps: exactly what 40 moves can reach."""

LATTICE_STEPS = ((-1, 0), (1, 0), (0, 1), (0, -1))
"""(di, dj) of each direction on the lattice (i along +x, j along +z), matching DIRECTION_DELTAS."""


@dataclass(frozen=True)
class Demonstration:
    """An oracle action sequence and the main block's centre before each action.

    ``actions`` ends with STOP unless the path needed all 40 moves; ``points`` has one more
    entry than ``actions`` (the last point repeated), as the original simulator sent them.
    """

    actions: tuple[int, ...]
    points: np.ndarray  # [len(actions) + 1, 2]
    block: int

    def __len__(self) -> int:
        return len(self.actions)


def plan(transition: Transition, horizon: int = HORIZON) -> Demonstration:
    """The shortest path of the moved block to the reachable lattice cell nearest its goal."""
    block = transition.moved_block
    origin = transition.start[block]
    goal = transition.goal[block]
    obstacles = np.delete(transition.start, block, axis=0)
    cell_x, cell_z = lattice(origin)
    blocked = blocked_cells(cell_x, cell_z, obstacles)
    centre = LATTICE_RADIUS
    blocked[centre, centre] = False  # the start cell is never collision-checked
    depth = breadth_first_depth(blocked, (centre, centre), horizon)
    end = nearest_reachable_cell(depth, goal_gaps(cell_x, cell_z, goal))
    path = _walk_back(depth, end)
    moves = [NUM_DIRECTIONS * block + direction for direction in path]
    cells = _cells_along(centre, path)
    points = np.stack([[cell_x[i], cell_z[j]] for i, j in cells])
    actions = moves + [STOP]
    points = np.concatenate([points, points[-1:]])
    return Demonstration(tuple(actions[:horizon]), points[: horizon + 1], block)


def lattice(origin: np.ndarray, radius: int = LATTICE_RADIUS) -> tuple[np.ndarray, np.ndarray]:
    """x and z of the cells ``origin ± radius`` steps (lattice index i along x, j along z)."""
    offsets = np.arange(-radius, radius + 1) * STEP
    return origin[0] + offsets, origin[1] + offsets


def goal_gaps(cell_x: np.ndarray, cell_z: np.ndarray, goal: np.ndarray) -> np.ndarray:
    """Distance of every lattice cell's centre to ``goal`` [I, J]."""
    return np.hypot(cell_x[:, None] - goal[0], cell_z[None, :] - goal[1])


def nearest_reachable_cell(depth: np.ndarray, gap: np.ndarray) -> tuple[int, int]:
    """The reachable cell (``depth >= 0``) nearest the goal; among exact ties the one found
    earliest (fewest moves), then the first in index order."""
    gap = np.where(depth >= 0, gap, np.inf)
    order = np.lexsort((depth.ravel(), gap.ravel()))
    i, j = np.unravel_index(order[0], gap.shape)
    return int(i), int(j)


def blocked_cells(cell_x: np.ndarray, cell_z: np.ndarray, obstacles: np.ndarray) -> np.ndarray:
    """[I, J] cells where the moved block's square would overlap one of ``obstacles`` [N, 2]."""
    near_x = np.abs(cell_x[:, None] - obstacles[None, :, 0]) <= COLLISION_EXTENT  # [I, N]
    near_z = np.abs(cell_z[:, None] - obstacles[None, :, 1]) <= COLLISION_EXTENT  # [J, N]
    return (near_x[:, None, :] & near_z[None, :, :]).any(axis=-1)


def breadth_first_depth(blocked: np.ndarray, source: tuple[int, int], horizon: int | None = None) -> np.ndarray:
    """Moves needed to reach each free cell from ``source`` (-1 if not within ``horizon``
    moves; no limit with ``None``). Each wave is one dilation of the frontier."""
    depth = np.full(blocked.shape, -1, dtype=np.int64)
    depth[source] = 0
    frontier = np.zeros(blocked.shape, dtype=bool)
    frontier[source] = True
    limit = blocked.size if horizon is None else horizon
    for moves in range(1, limit + 1):
        grown = np.zeros_like(frontier)
        grown[1:, :] |= frontier[:-1, :]
        grown[:-1, :] |= frontier[1:, :]
        grown[:, 1:] |= frontier[:, :-1]
        grown[:, :-1] |= frontier[:, 1:]
        frontier = grown & ~blocked & (depth < 0)
        if not frontier.any():
            break
        depth[frontier] = moves
    return depth


def _walk_back(depth: np.ndarray, end: tuple[int, int]) -> list[int]:
    """Directions of one shortest path from the centre to ``end`` (first direction wins ties)."""
    i, j = end
    path = []
    while depth[i, j] > 0:
        for direction, (di, dj) in enumerate(LATTICE_STEPS):
            pi, pj = i - di, j - dj
            if 0 <= pi < depth.shape[0] and 0 <= pj < depth.shape[1] and depth[pi, pj] == depth[i, j] - 1:
                path.append(direction)
                i, j = pi, pj
                break
    return path[::-1]


def _cells_along(centre: int, path: Sequence[int]) -> list[tuple[int, int]]:
    cells = [(centre, centre)]
    for direction in path:
        di, dj = LATTICE_STEPS[direction]
        cells.append((cells[-1][0] + di, cells[-1][1] + dj))
    return cells


class DemonstrationCache:
    """Plans each distinct transition once (nine instructions share one demonstration)."""

    def __init__(self, horizon: int = HORIZON):
        self.horizon = horizon
        self._plans: dict[int, Demonstration] = {}

    def __call__(self, transition: Transition) -> Demonstration:
        key = id(transition)
        if key not in self._plans:
            self._plans[key] = plan(transition, self.horizon)
        return self._plans[key]

    def batch(self, transitions: Iterable[Transition], device: str | torch.device = "cpu") -> "DemoBatch":
        return DemoBatch.from_demonstrations([self(t) for t in transitions], self.horizon, device)


@dataclass(frozen=True)
class DemoBatch:
    """Demonstrations of a batch, padded: actions with STOP, points with +inf (never nearest)."""

    actions: torch.Tensor  # [B, horizon + 1] long
    points: torch.Tensor  # [B, horizon + 1, 2] float64
    lengths: torch.Tensor  # [B] number of real actions

    @classmethod
    def from_demonstrations(cls, demos: Sequence[Demonstration], horizon: int = HORIZON, device="cpu") -> "DemoBatch":
        size = len(demos)
        actions = np.full((size, horizon + 1), STOP, dtype=np.int64)
        points = np.full((size, horizon + 1, 2), np.inf)
        for row, demo in enumerate(demos):
            actions[row, : len(demo)] = demo.actions
            points[row, : len(demo.points)] = demo.points
        return cls(
            torch.from_numpy(actions).to(device),
            torch.from_numpy(points).to(device),
            torch.tensor([len(d) for d in demos], dtype=torch.long, device=device),
        )
