"""Reward and shaping values (docs/blocks_environment.md §4), computed by hand on tiny boards."""

import numpy as np
import pytest
import torch

from tests.conftest import requires_real_blocks
from zoo.blocks.board import BoardBatch
from zoo.blocks.demos import DemonstrationCache
from zoo.blocks.env import BlocksEnv
from zoo.blocks.geometry import BLOCK_SIZE, STOP
from zoo.blocks.records import Transition
from zoo.blocks.reward import DELTA, RewardConfig, ShapedReward

RIGHT, LEFT = 1, 0


def setup(variant="shaped", start=((0.0, 0.0),), goal=((0.3, 0.0),)):
    t = Transition("hand", 0, 1, "digit", np.array(start, float), np.array(goal, float), ("x",))
    boards = BoardBatch.from_transitions([t])
    demos = DemonstrationCache().batch([t])
    env, reward = BlocksEnv(), ShapedReward(RewardConfig(variant))
    env.reset(boards)
    reward.reset(boards, demos)
    return env, reward


def take(env, reward, action):
    actions = torch.tensor([action])
    return float(reward(env.step(actions), actions)[0])


def test_delta_is_the_float32_literal_of_the_original():
    assert DELTA == pytest.approx(0.0199999996, abs=1e-10)


def test_first_on_path_move_earns_step_cost_distance_gain_and_full_advice():
    env, reward = setup()
    # -δ + F1 (0.1 / 0.1524) + F2 (1 - (-δ)): the look-back advice starts from -δ
    assert take(env, reward, RIGHT) == pytest.approx(-DELTA + 0.1 / BLOCK_SIZE + 1 + DELTA)


def test_later_on_path_moves_earn_no_more_advice():
    env, reward = setup()
    take(env, reward, RIGHT)
    assert take(env, reward, RIGHT) == pytest.approx(-DELTA + 0.1 / BLOCK_SIZE + 0.0)


def test_off_path_move_loses_the_advice_and_distance():
    env, reward = setup()
    # moving away: F1 = -0.1/bs, φ2 = -δ so F2 = -δ - (-δ) = 0
    assert take(env, reward, LEFT) == pytest.approx(-DELTA - 0.1 / BLOCK_SIZE)


def test_stop_near_the_goal_at_the_demo_end_earns_exactly_one():
    env, reward = setup()
    for _ in range(3):
        take(env, reward, RIGHT)
    assert take(env, reward, STOP) == pytest.approx(1.0)


def test_stop_far_from_the_goal_is_minus_one_plus_lost_advice():
    env, reward = setup()
    # φ2(start, STOP) = -δ (the demo moves right here), previous -δ: F2 = 0
    assert take(env, reward, STOP) == pytest.approx(-1.0)


def test_failed_move_costs_one_and_leaves_the_look_back_state():
    env, reward = setup(start=((0.0, 0.0), (0.25, 0.0)), goal=((0.0, 0.3), (0.25, 0.0)))
    assert take(env, reward, RIGHT) == pytest.approx(-1.0)  # into the neighbour
    up = 2
    assert take(env, reward, up) == pytest.approx(-DELTA + 0.1 / BLOCK_SIZE + 1 + DELTA)


@pytest.mark.parametrize(
    "variant, expected",
    [
        ("problem", -DELTA),
        ("f1", -DELTA + 0.1 / BLOCK_SIZE),
        ("f2", -DELTA + 1 + DELTA),
        ("distance", -0.2 / BLOCK_SIZE),
    ],
)
def test_each_ablation_reward_of_the_first_move(variant, expected):
    env, reward = setup(variant)
    assert take(env, reward, RIGHT) == pytest.approx(expected)


def test_the_no_shaping_failure_penalty_is_configurable():
    env, reward = setup(start=((0.0, 0.0), (0.25, 0.0)), goal=((0.0, 0.3), (0.25, 0.0)))
    reward.config = RewardConfig("problem", failure_penalty=-DELTA)
    assert take(env, reward, RIGHT) == pytest.approx(-DELTA)


def test_unknown_reward_variant_is_refused():
    with pytest.raises(ValueError, match="unknown reward variant"):
        RewardConfig("sparse-ish")


@requires_real_blocks
def test_the_spec_worked_example_on_the_first_dev_transition(blocks_dev):
    transition = blocks_dev.transitions[0]
    boards = BoardBatch.from_transitions([transition])
    demos = DemonstrationCache().batch([transition])
    env, reward = BlocksEnv(), ShapedReward()
    env.reset(boards)
    reward.reset(boards, demos)
    rewards = []
    for step in range(int(demos.lengths[0])):
        actions = demos.actions[:, step]
        rewards.append(float(reward(env.step(actions), actions)[0]))
    assert rewards[0] == pytest.approx(1.553, abs=5e-4)
    assert rewards[-1] == pytest.approx(1.0)
    assert sum(rewards) == pytest.approx(8.73, abs=5e-3)
