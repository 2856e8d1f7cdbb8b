"""The N examples a quick evaluation (``--limit N``) scores: drawn over the whole split with a
seed, or with ``first`` the split's first N.

A split's first N are few layouts or few dialogues (the Blocks dev split's first 100 episodes
are one or two boards), so their mean says little about the split; N drawn over it, kept in
split order, are a sample of all of it."""

from __future__ import annotations

import random


def subset_indices(total: int, limit: int | None, seed: int = 0, first: bool = False) -> list[int]:
    """Indices into a split of ``total`` examples: all without ``limit``, else ``limit`` of them
    (the first ones, or drawn with ``seed`` and sorted)."""
    if limit is None or limit >= total:
        return list(range(total))
    if limit < 1:
        raise ValueError(f"the limit must be at least 1, got {limit}")
    if first:
        return list(range(limit))
    return sorted(random.Random(seed).sample(range(total), limit))


def describe_subset(used: int, total: int, seed: int, first: bool) -> dict:
    """What a result was computed on, for its JSON: ``{"n", "of", "drawn", "seed"}`` with
    ``drawn`` ``"all"``, ``"first"`` or ``"spread"`` (``seed`` is None unless spread)."""
    drawn = "all" if used >= total else "first" if first else "spread"
    return {"n": used, "of": total, "drawn": drawn, "seed": seed if drawn == "spread" else None}


def subset_words(subset: dict, unit: str) -> str:
    """``"100 of 3,000 episodes drawn with seed 0"``, ``"the first 100 of 3,000 episodes"`` or
    ``"3,000 episodes"``: the same, for a person."""
    if subset["drawn"] == "all":
        return f"{subset['n']:,} {unit}"
    if subset["drawn"] == "first":
        return f"the first {subset['n']:,} of {subset['of']:,} {unit}"
    return f"{subset['n']:,} of {subset['of']:,} {unit} drawn with seed {subset['seed']}"
