"""torchmetrics for the zoo's benchmarks."""

from __future__ import annotations

import torch
from torchmetrics import Metric
from torchmetrics.utilities import dim_zero_cat


class DistanceError(Metric):
    """Blocks distance error (Bisk et al. 2016) over episodes: mean and median of the final
    state's error, and of the minimum error reached during the episode.

    ``update(final_error, min_error)`` takes per-episode errors in block lengths (see
    ``zoo.blocks.board.distance_error``). Per-episode values are kept (not running sums)
    because the paper reports medians; under DDP they are gathered from every rank.
    """

    full_state_update = False
    higher_is_better = False

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.add_state("final", default=[], dist_reduce_fx="cat")
        self.add_state("minimum", default=[], dist_reduce_fx="cat")

    def update(self, final_error: torch.Tensor, min_error: torch.Tensor | None = None) -> None:
        final_error = torch.as_tensor(final_error, dtype=torch.float64).flatten()
        min_error = final_error if min_error is None else torch.as_tensor(min_error, dtype=torch.float64).flatten()
        if final_error.shape != min_error.shape:
            raise ValueError("final_error and min_error must have one value per episode")
        self.final.append(final_error)
        self.minimum.append(min_error)

    def final_errors(self) -> torch.Tensor:
        """Every episode's final error, in update order (for intervals over episodes)."""
        # a list of per-batch tensors, or one tensor once gathered over DDP ranks
        if isinstance(self.final, list) and not self.final:
            raise ValueError("DistanceError read before any update()")
        return dim_zero_cat(self.final)

    def compute(self) -> dict[str, torch.Tensor]:
        final, minimum = self.final_errors(), dim_zero_cat(self.minimum)
        return {
            "mean": final.mean(),
            "median": final.quantile(0.5),
            "min_mean": minimum.mean(),
            "min_median": minimum.quantile(0.5),
            "n": torch.tensor(final.numel()),
        }
