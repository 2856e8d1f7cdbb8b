"""Percentile bootstrap intervals of a mean over examples.

Why: a yardstick of a few dozen examples (the real LIGHT fixture) moves by several points when
one example flips, so a number from it means little without its spread. The percentile
bootstrap makes no assumption about the metric's distribution (hits are 0/1, reciprocal ranks
are not) and needs nothing but the per-example values.

The resampled example indices depend only on ``seed``, ``resamples`` and the number of
examples, so every metric of one evaluation, and every model scored on the same examples, is
resampled identically (a paired bootstrap): intervals are reproducible and comparable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np


@dataclass(frozen=True)
class Bootstrap:
    """``resamples`` draws of ``n`` examples with replacement from ``numpy``'s
    ``default_rng(seed)``; the interval is the ``(1 - level) / 2`` and ``(1 + level) / 2``
    percentiles of the resampled means."""

    resamples: int = 1000
    seed: int = 0
    level: float = 0.95

    def __post_init__(self) -> None:
        if self.resamples < 1:
            raise ValueError(f"resamples must be at least 1, got {self.resamples}")
        if not 0.0 < self.level < 1.0:
            raise ValueError(f"level must be between 0 and 1, got {self.level}")

    def indices(self, n: int) -> np.ndarray:
        """The ``[resamples, n]`` example indices (the same for every metric of ``n`` examples)."""
        if n < 1:
            raise ValueError("a bootstrap needs at least one example")
        return np.random.default_rng(self.seed).integers(0, n, size=(self.resamples, n))

    def interval(self, values: Sequence[float]) -> tuple[float, float]:
        """(low, high) percentile interval of the mean of ``values``."""
        array = np.asarray(values, dtype=np.float64)
        return self._percentiles(array[self.indices(len(array))].mean(axis=1))

    def paired(self, first: Sequence[float], second: Sequence[float]) -> tuple[float, tuple[float, float]]:
        """The mean of ``first - second`` over the same examples and its interval: each resample
        takes the same examples for both, so what the two share does not widen it."""
        if len(first) != len(second):
            raise ValueError(f"paired values need the same examples, got {len(first)} and {len(second)}")
        difference = np.asarray(first, dtype=np.float64) - np.asarray(second, dtype=np.float64)
        return float(difference.mean()), self.interval(difference)

    def ratio(self, numerator: Sequence[float], denominator: Sequence[float]) -> tuple[float, tuple[float, float]]:
        """``sum(numerator) / sum(denominator)`` over the examples and its interval: a
        corpus-level rate (NLL per word, whose exponential is a perplexity) is a ratio of sums,
        not a mean of per-example ratios, so each resample sums both over the same examples."""
        top, bottom = np.asarray(numerator, dtype=np.float64), np.asarray(denominator, dtype=np.float64)
        if top.shape != bottom.shape:
            raise ValueError(f"a ratio needs one numerator and one denominator per example, got {top.shape} and "
                             f"{bottom.shape}")
        drawn = self.indices(len(top))
        return float(top.sum() / bottom.sum()), self._percentiles(top[drawn].sum(axis=1) / bottom[drawn].sum(axis=1))

    def _percentiles(self, resampled: np.ndarray) -> tuple[float, float]:
        """The ``(1 - level) / 2`` and ``(1 + level) / 2`` percentiles of a statistic's resampled values."""
        tail = (1.0 - self.level) / 2 * 100
        low, high = np.percentile(resampled, [tail, 100 - tail])
        return float(low), float(high)

    def describe(self) -> dict:
        """How the intervals were made, for a result's JSON."""
        return {"method": "percentile bootstrap over examples", "resamples": self.resamples,
                "seed": self.seed, "level": self.level}
