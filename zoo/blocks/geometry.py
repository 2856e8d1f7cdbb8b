"""Constants and action encoding of the Blocks world (docs/blocks_environment.md §2).

Positions are kept in the JSON frame of the release: ``(x, z)`` with screen-right = +x and
screen-up = +z. The original simulator negated both axes internally; its four action
directions are therefore re-expressed here in the JSON frame, so the action ids mean exactly
what they meant to the original agent.
"""

from __future__ import annotations

import torch

BLOCK_SIZE = 0.1524
"""Edge of every block in world units (``side_length`` in every episode of the release)."""

STEP = 0.1
"""Distance a block travels in one move: 0.04 of the 2.5-unit board."""

BOARD_HALF = 1.25
"""The board spans [-1.25, 1.25]^2; a move whose target centre leaves it fails."""

COLLISION_TOLERANCE = 0.002
"""Each block's square is inflated by this much per side when testing overlap."""

COLLISION_EXTENT = BLOCK_SIZE + COLLISION_TOLERANCE
"""Two centres closer than this on both axes overlap."""

MAX_BLOCKS = 20
NUM_DIRECTIONS = 4
NUM_ACTIONS = MAX_BLOCKS * NUM_DIRECTIONS + 1
STOP = NUM_ACTIONS - 1
HORIZON = 40
"""An episode ends after STOP or after this many non-STOP actions."""

DIRECTION_NAMES = ("left", "right", "up", "down")
"""On-screen meaning of direction ids 0..3 (the protocol called them north/south/east/west)."""

PROTOCOL_NAMES = ("north", "south", "east", "west")

DIRECTION_DELTAS = torch.tensor(
    [[-STEP, 0.0], [STEP, 0.0], [0.0, STEP], [0.0, -STEP]], dtype=torch.float64
)
"""(dx, dz) of each direction in the JSON frame (docs/blocks_environment.md §2.2, last two columns)."""

LOGO_BRANDS = (
    "adidas", "bmw", "burgerking", "cocacola", "esso", "heineken", "hp", "mcdonalds",
    "mercedesbenz", "nvidia", "pepsi", "shell", "sri", "starbucks", "stella", "target",
    "texaco", "toyota", "twitter", "ups",
)
"""Block ``i`` of a logo episode wears brand ``LOGO_BRANDS[i]`` (docs/blocks_environment.md §1.2)."""


def encode_action(block: int | torch.Tensor, direction: int | torch.Tensor):
    """Action id of moving ``block`` one step in ``direction`` (``4 * block + direction``)."""
    return block * NUM_DIRECTIONS + direction


def decode_action(action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(block, direction)`` of action ids, the factorisation the policy predicts.

    STOP decodes to block 20 (the "none" block) and direction 4 (the STOP direction).
    """
    action = torch.as_tensor(action)
    block = action // NUM_DIRECTIONS
    direction = torch.where(action == STOP, NUM_DIRECTIONS, action % NUM_DIRECTIONS)
    return block, direction


def describe_action(action: int) -> str:
    """Human-readable action, e.g. ``"move block 6 left"`` or ``"STOP"``."""
    if action == STOP:
        return "STOP"
    if not 0 <= action < STOP:
        raise ValueError(f"action must be in 0..{STOP}, got {action}")
    block, direction = divmod(action, NUM_DIRECTIONS)
    return f"move block {block + 1} {DIRECTION_NAMES[direction]}"


def squares_overlap(centre: torch.Tensor, others: torch.Tensor) -> torch.Tensor:
    """Whether a block at ``centre`` [..., 2] overlaps each of ``others`` [..., N, 2].

    Equal axis-aligned squares overlap iff their centres are within ``COLLISION_EXTENT``
    on both axes (the planner's rule, which the spec recommends over the Unity ray test).
    """
    gap = (others - centre.unsqueeze(-2)).abs()
    return (gap <= COLLISION_EXTENT).all(dim=-1)
