"""Typed records of the Blocks data: one :class:`Transition` per A0 annotation, one
:class:`Example` per (transition, instruction) pair (docs/blocks_environment.md §1.3)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from zoo.blocks.geometry import BLOCK_SIZE

DECORATIONS = ("digit", "logo")

MOVE_TOLERANCE = 1e-3
"""A block whose centre shifts by less than this (on both axes) between two boards has not moved."""


def moved_blocks(start: np.ndarray, goal: np.ndarray) -> np.ndarray:
    """Indices of the blocks whose centres differ between the ``[n, 2]`` boards ``start`` and ``goal``."""
    return np.flatnonzero(np.abs(start - goal).max(axis=1) > MOVE_TOLERANCE)


@dataclass(frozen=True, eq=False)
class Transition:
    """A start board and a goal board that differ by the move of one block.

    Positions are ``(x, z)`` centres in the JSON frame, shape ``[n_blocks, 2]``, float64.
    Block ``i`` is digit ``i + 1`` or logo brand ``i`` depending on ``decoration``.
    """

    episode_id: str
    start_frame: int
    goal_frame: int
    decoration: str
    start: np.ndarray
    goal: np.ndarray
    instructions: tuple[str, ...]
    users: tuple[str, ...] = ()
    block_size: float = BLOCK_SIZE

    def __post_init__(self):
        if self.decoration not in DECORATIONS:
            raise ValueError(f"decoration must be one of {DECORATIONS}, got {self.decoration!r}")
        if self.start.shape != self.goal.shape or self.start.ndim != 2 or self.start.shape[1] != 2:
            raise ValueError(
                f"start and goal must both be [n_blocks, 2]; got {self.start.shape} and {self.goal.shape}"
            )

    @property
    def n_blocks(self) -> int:
        return self.start.shape[0]

    @property
    def moved_block(self) -> int:
        """Index of the block that moves (the "main block" of the reward and the planner)."""
        moved = moved_blocks(self.start, self.goal)
        return int(moved[0]) if len(moved) else 0

    @property
    def key(self) -> tuple[str, int, int]:
        return (self.episode_id, self.start_frame, self.goal_frame)

    def examples(self) -> list["Example"]:
        users = self.users or ("",) * len(self.instructions)
        return [Example(self, text, user) for text, user in zip(self.instructions, users)]


@dataclass(frozen=True, eq=False)
class Example:
    """One instruction for one transition: what the agent reads, where it starts, where it should end."""

    transition: Transition
    instruction: str
    user: str = ""

    @property
    def decoration(self) -> str:
        return self.transition.decoration


@dataclass(frozen=True, eq=False)
class BlocksSplit:
    """A split as the simulator served it: transitions and examples in file order.

    ``tuning`` marks the examples of the first two logo and first two digit episodes, which
    the original trainer held out for validation (675 of train; docs/blocks_environment.md §1.4).
    """

    name: str
    transitions: list[Transition]
    examples: list[Example]
    tuning: np.ndarray = field(repr=False)

    def __len__(self) -> int:
        return len(self.examples)

    def training_examples(self) -> list[Example]:
        return [e for e, held in zip(self.examples, self.tuning) if not held]

    def tuning_examples(self) -> list[Example]:
        return [e for e, held in zip(self.examples, self.tuning) if held]
