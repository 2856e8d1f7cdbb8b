"""The distance-error metric: mean and median of per-episode errors, final and closest."""

import pytest
import torch

from zoo.blocks.board import distance_error
from zoo.metrics import DistanceError


def test_error_is_the_sum_over_blocks_in_block_lengths():
    positions = torch.tensor([[[0.0, 0.0], [1.0, 1.0]]], dtype=torch.float64)
    goal = torch.tensor([[[0.3, 0.4], [1.0, 1.0]]], dtype=torch.float64)
    assert distance_error(positions, goal).item() == pytest.approx(0.5 / 0.1524)


def test_metric_reports_mean_median_and_closest_approach():
    metric = DistanceError()
    metric.update(torch.tensor([1.0, 2.0]), torch.tensor([0.5, 2.0]))
    metric.update(torch.tensor([3.0, 10.0]), torch.tensor([3.0, 1.0]))
    result = metric.compute()
    assert result["mean"].item() == pytest.approx(4.0)
    assert result["median"].item() == pytest.approx(2.5)  # even count: mean of the middle two
    assert result["min_mean"].item() == pytest.approx(1.625)
    assert result["min_median"].item() == pytest.approx(1.5)
    assert int(result["n"]) == 4


@pytest.mark.filterwarnings("ignore:The ``compute`` method")
def test_metric_without_updates_says_so():
    with pytest.raises(ValueError, match="before any update"):
        DistanceError().compute()
