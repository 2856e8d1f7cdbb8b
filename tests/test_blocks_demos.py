"""A* demonstrations (docs/blocks_environment.md §3): shortest paths on small hand-made boards, and the paper's oracle."""

import numpy as np
import pytest

from tests.conftest import requires_real_blocks
from zoo.blocks.demos import plan
from zoo.blocks.geometry import STOP
from zoo.blocks.records import Transition

LEFT, RIGHT, UP, DOWN = range(4)


def transition(start, goal):
    return Transition("hand", 0, 1, "digit", np.array(start, float), np.array(goal, float), ("x",))


def test_free_board_path_is_manhattan_optimal_and_ends_with_stop():
    demo = plan(transition([[0, 0], [0.9, 0.9]], [[0.3, -0.2], [0.9, 0.9]]))
    moves = demo.actions[:-1]
    assert demo.actions[-1] == STOP
    assert len(moves) == 5 and moves.count(RIGHT) == 3 and moves.count(DOWN) == 2
    assert demo.points[-1].tolist() == pytest.approx([0.3, -0.2])
    assert len(demo.points) == len(demo.actions) + 1


def test_path_detours_around_a_wall_of_blocks():
    wall = [[0.2, z] for z in (-0.3, -0.15, 0.0, 0.15, 0.3)]
    demo = plan(transition([[0, 0], *wall], [[0.4, 0.0], *wall]))
    # straight right is blocked: the block must go round the wall (4 + 2·(a detour ≥ 4))
    assert len(demo.actions) - 1 > 4
    positions = np.cumsum([[0, 0]] + [[(-0.1, 0.1, 0, 0)[a], (0, 0, 0.1, -0.1)[a]] for a in demo.actions[:-1]], axis=0)
    for position in positions:  # never overlaps the wall
        assert (np.abs(np.array(wall) - position).max(axis=1) > 0.1544).all()
    assert demo.points[-1].tolist() == pytest.approx([0.4, 0.0])


def test_unreachable_goal_ends_on_the_nearest_reachable_cell():
    # the goal sits inside an obstacle's footprint: the nearest free lattice cell is next to it
    demo = plan(transition([[0, 0], [0.5, 0]], [[0.5, 0.05], [0.5, 0]]))
    end = demo.points[-1]
    assert np.abs(end - np.array([0.5, 0.0])).max() > 0.1544
    assert np.linalg.norm(end - np.array([0.5, 0.05])) < 0.25


def test_paths_longer_than_the_horizon_are_truncated_without_stop():
    demo = plan(transition([[-1.0, -1.0]], [[1.0, 1.0]]))
    assert len(demo.actions) == 40 and STOP not in demo.actions
    assert len(demo.points) == 41


@requires_real_blocks
def test_demonstrations_reproduce_the_papers_oracle_error(blocks_dev):
    from zoo.blocks.evaluate import evaluate_policy
    from zoo.factory import create_model

    result = evaluate_policy(create_model("blocks-demonstrations"), blocks_dev.examples, progress=False)
    assert result["mean"] == pytest.approx(0.349, abs=5e-4)
    assert result["median"] == pytest.approx(0.302, abs=5e-4)
    assert result["stop_rate"] == 1.0  # no dev demonstration is truncated at the horizon (docs/blocks_environment.md §3)
