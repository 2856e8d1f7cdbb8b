"""Two LIGHT models compared on the same examples: the difference with a paired interval."""

from __future__ import annotations

import pytest

from tests.conftest import LIGHT_DATA


def test_a_paired_difference_resamples_the_same_examples_for_both_models():
    import torch

    from zoo.bootstrap import Bootstrap
    from zoo.light.evaluate import paired_difference

    first = {"hit": torch.tensor([1.0, 1.0, 0.0, 1.0] * 10)}
    second = {"hit": torch.tensor([1.0, 0.0, 0.0, 1.0] * 10)}  # agrees with the first except on case 2 of 4
    result = paired_difference(first, second, "r_at_1", Bootstrap(500, 0))
    assert result["r_at_1"] == 0.5 and result["difference"] == 0.25
    low, high = result["ci95"]
    assert 0.05 < low < 0.25 < high <= 0.4  # the mean of ten 1s and thirty 0s, resampled
    same = paired_difference(first, first, "r_at_1", Bootstrap(500, 0))
    assert same["difference"] == 0.0 and same["ci95"] == [0.0, 0.0]


@pytest.mark.skipif(not (LIGHT_DATA / "fixture" / "light_data_fixture.pkl").is_file(), reason="no LIGHT fixture")
def test_zoo_eval_light_versus_reports_the_paired_difference(capsys):
    import json

    from zoo.cli import main

    assert main(["eval", "light", "--model", "random", "--versus", "random", "--source", "fixture", "--json"]) == 0
    versus = json.loads(capsys.readouterr().out)["versus"]
    assert versus["model"] == "random" and versus["difference"] == 0.0 and versus["ci95"] == [0.0, 0.0]
