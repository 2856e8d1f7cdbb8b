"""Procedural Blocks transitions: the same records as the real data, made offline.

Random non-overlapping boards of digit or logo blocks; one block moves next to another, and
templated instructions say so ("move block 6 just right of block 11"). They are the embedded
default when the real release is absent, and they make fast tests. They are not a substitute
for the real benchmark: the language is templated and every goal is an adjacency.
"""

from __future__ import annotations

import numpy as np

from zoo.blocks.data import build_split
from zoo.blocks.geometry import COLLISION_EXTENT, LOGO_BRANDS, MAX_BLOCKS
from zoo.blocks.records import BlocksSplit, Transition

PLACEMENT_HALF = 1.0
"""Centres of the real data lie within [-1, 1]^2; so do these."""

ADJACENT_OFFSET = 0.167
"""Typical centre offset of adjacent blocks in the real data (a 0.015 gap)."""

MIN_TRAVEL = 0.2
"""The real data's moved blocks travel at least 0.20 units."""

RELATIONS = {
    "right": ((1.0, 0.0), ("just right of", "to the right of", "immediately right of")),
    "left": ((-1.0, 0.0), ("just left of", "to the left of", "immediately left of")),
    "above": ((0.0, 1.0), ("just above", "directly above", "right on top of")),
    "below": ((0.0, -1.0), ("just below", "directly below", "right underneath")),
}

TEMPLATES = (
    "move {moved} {relation} {reference}",
    "place {moved} {relation} {reference}",
    "put {moved} so that it sits {relation} {reference}",
    "slide {moved} until it is {relation} {reference}",
)

DEFAULT_SIZES = {"train": 1200, "dev": 150, "test": 300}

MAX_TRANSITIONS = 100_000
"""Transitions a procedural split may have: 75 times the real train split's 1,319, and about a
minute to generate. A size past it is a slip of the keyboard (an extra three zeros), which
would otherwise generate boards for hours before training starts."""
DEFAULT_SEEDS = {"train": 0, "dev": 1, "test": 2}


def block_name(index: int, decoration: str) -> str:
    """How instructions refer to block ``index``: "block 7" or "the bmw block"."""
    return f"block {index + 1}" if decoration == "digit" else f"the {LOGO_BRANDS[index]} block"


def random_layout(rng: np.random.Generator, n_blocks: int, max_tries: int = 10_000) -> np.ndarray:
    """``n_blocks`` centres in [-1, 1]^2 with no two squares overlapping."""
    centres: list[np.ndarray] = []
    for _ in range(max_tries):
        candidate = rng.uniform(-PLACEMENT_HALF, PLACEMENT_HALF, size=2)
        if all(np.abs(candidate - c).max() > COLLISION_EXTENT + 1e-3 for c in centres):
            centres.append(candidate)
            if len(centres) == n_blocks:
                return np.array(centres)
    raise RuntimeError(f"could not place {n_blocks} blocks without overlap")


def _goal_next_to(rng, layout, moved, min_travel):
    """A free spot adjacent to some other block, or None if this layout offers none."""
    others = [i for i in range(len(layout)) if i != moved]
    for reference in rng.permutation(others):
        for relation in rng.permutation(list(RELATIONS)):
            direction, _ = RELATIONS[relation]
            goal = layout[reference] + ADJACENT_OFFSET * np.array(direction)
            if np.abs(goal).max() > PLACEMENT_HALF or np.linalg.norm(goal - layout[moved]) < min_travel:
                continue
            rest = np.delete(layout, moved, axis=0)
            if (np.abs(rest - goal).max(axis=1) > COLLISION_EXTENT).all():
                return int(reference), str(relation), goal
    return None


def generate_transitions(
    count: int,
    seed: int = 0,
    min_blocks: int = 8,
    max_blocks: int = MAX_BLOCKS,
    logo_fraction: float = 0.5,
    instructions_per_transition: int = 3,
    prefix: str = "procedural",
) -> list[Transition]:
    """``count`` seeded transitions, each with several templated instructions."""
    if not 2 <= min_blocks <= max_blocks <= MAX_BLOCKS:
        raise ValueError(f"need 2 <= min_blocks <= max_blocks <= {MAX_BLOCKS}")
    rng = np.random.default_rng(seed)
    transitions = []
    while len(transitions) < count:
        n_blocks = int(rng.integers(min_blocks, max_blocks + 1))
        decoration = "logo" if rng.random() < logo_fraction else "digit"
        layout = random_layout(rng, n_blocks)
        moved = int(rng.integers(n_blocks))
        placement = _goal_next_to(rng, layout, moved, MIN_TRAVEL)
        if placement is None:
            continue
        reference, relation, goal_position = placement
        goal = layout.copy()
        goal[moved] = goal_position
        phrases = RELATIONS[relation][1]
        instructions = tuple(
            TEMPLATES[int(rng.integers(len(TEMPLATES)))].format(
                moved=block_name(moved, decoration),
                relation=phrases[int(rng.integers(len(phrases)))],
                reference=block_name(reference, decoration),
            )
            for _ in range(instructions_per_transition)
        )
        transitions.append(
            Transition(
                episode_id=f"{prefix}-{seed}-{len(transitions)}",
                start_frame=0,
                goal_frame=1,
                decoration=decoration,
                start=layout,
                goal=goal,
                instructions=instructions,
                users=("template",) * instructions_per_transition,
            )
        )
    return transitions


def check_split_size(name: str, transitions: int) -> None:
    """Refuse a split of more than :data:`MAX_TRANSITIONS` transitions, in one line."""
    if transitions > MAX_TRANSITIONS:
        raise ValueError(f"procedural_sizes: {name} must be at most {MAX_TRANSITIONS:,} transitions (the real train "
                         f"split has 1,319), got {transitions:,}")


def procedural_split(name: str, transitions: int | None = None, seed: int | None = None, **options) -> BlocksSplit:
    """A whole split of procedural data: one single-transition episode per board."""
    count = DEFAULT_SIZES.get(name, 200) if transitions is None else transitions
    check_split_size(name, count)
    seed = DEFAULT_SEEDS.get(name, 0) if seed is None else seed
    episodes = [[t] for t in generate_transitions(count, seed, prefix=f"procedural-{name}", **options)]
    return build_split(name, episodes)
