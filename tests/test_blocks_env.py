"""The simulator's mechanics (docs/blocks_environment.md §2), on hand-made boards."""

import numpy as np
import pytest
import torch

from zoo.blocks.board import BoardBatch
from zoo.blocks.env import BlocksEnv, apply_moves
from zoo.blocks.geometry import BLOCK_SIZE, STOP, decode_action, describe_action, encode_action
from zoo.blocks.records import Transition

LEFT, RIGHT, UP, DOWN = range(4)


def board(*centres, goal=None):
    """A one-transition batch with blocks at ``centres`` (JSON frame)."""
    start = np.array(centres, dtype=float)
    goal = start.copy() if goal is None else np.array(goal, dtype=float)
    return BoardBatch.from_transitions([Transition("t", 0, 1, "digit", start, goal, ("x",))])


def step_once(boards, action):
    positions, failed = apply_moves(boards.start, boards.n_blocks, torch.tensor([action]))
    return positions[0], bool(failed[0])


def test_action_ids_are_block_times_four_plus_direction():
    assert encode_action(5, UP) == 22
    block, direction = decode_action(torch.tensor([22, STOP]))
    assert block.tolist() == [5, 20] and direction.tolist() == [UP, 4]
    assert describe_action(22) == "move block 6 up"
    assert describe_action(STOP) == "STOP"


@pytest.mark.parametrize("direction, delta", [(LEFT, (-0.1, 0)), (RIGHT, (0.1, 0)), (UP, (0, 0.1)), (DOWN, (0, -0.1))])
def test_each_direction_moves_one_step_in_the_json_frame(direction, delta):
    positions, failed = step_once(board((0.0, 0.0)), encode_action(0, direction))
    assert not failed
    assert positions[0].tolist() == pytest.approx(list(delta))


def test_move_into_another_block_fails_and_changes_nothing():
    boards = board((0.0, 0.0), (0.25, 0.0))  # after one step right the gap would be 0.15 < 0.1544
    positions, failed = step_once(boards, encode_action(0, RIGHT))
    assert failed
    assert torch.equal(positions, boards.start[0])


def test_tolerance_blocks_a_move_that_only_touches_within_two_thousandths():
    touching = board((0.0, 0.0), (0.1 + BLOCK_SIZE + 0.0015, 0.0))
    clear = board((0.0, 0.0), (0.1 + BLOCK_SIZE + 0.0025, 0.0))
    assert step_once(touching, encode_action(0, RIGHT))[1]
    assert not step_once(clear, encode_action(0, RIGHT))[1]


def test_blocks_offset_sideways_by_more_than_a_block_do_not_collide():
    boards = board((0.0, 0.0), (0.1, 0.16))
    assert not step_once(boards, encode_action(0, RIGHT))[1]


def test_leaving_the_board_fails_but_overhanging_the_edge_is_allowed():
    assert step_once(board((1.2, 0.0)), encode_action(0, RIGHT))[1]  # centre would be at 1.3
    positions, failed = step_once(board((1.15, 0.0)), encode_action(0, RIGHT))  # centre at 1.25 exactly
    assert not failed and positions[0, 0].item() == pytest.approx(1.25)


def test_moving_an_absent_block_is_a_successful_no_op():
    boards = board((0.0, 0.0), (0.5, 0.5))
    positions, failed = step_once(boards, encode_action(7, LEFT))
    assert not failed
    assert torch.equal(positions, boards.start[0])


def test_absent_blocks_are_not_obstacles():
    boards = board((0.0, 0.0))  # block 1 is absent, padded at the origin as well
    assert not step_once(boards, encode_action(0, RIGHT))[1]


def test_episode_ends_on_stop_and_after_forty_moves():
    env = BlocksEnv()
    lone_block = Transition("t", 0, 1, "digit", np.zeros((1, 2)), np.zeros((1, 2)), ("x",))
    boards = BoardBatch.from_transitions([lone_block, lone_block])
    env.reset(boards)
    for move in range(40):
        assert not env.done[1]
        actions = torch.tensor([STOP if move == 3 else encode_action(5, LEFT), encode_action(5, LEFT)])
        outcome = env.step(actions)
    assert env.done.tolist() == [True, True]
    assert env.moves_taken.tolist() == [3, 40]
    assert env.stopped.tolist() == [True, False]  # ended by STOP; by the horizon
    assert not outcome.acted[0]


def test_failed_moves_count_toward_the_horizon():
    env = BlocksEnv(horizon=3)
    env.reset(board((1.2, 0.0)))
    for _ in range(3):
        outcome = env.step(torch.tensor([encode_action(0, RIGHT)]))
        assert outcome.failed[0]
    assert env.done[0]


def test_stepping_is_deterministic_and_vectorised(procedural_dev):
    boards = BoardBatch.from_transitions(procedural_dev.transitions)
    actions = torch.randint(0, 81, (len(boards),), generator=torch.Generator().manual_seed(0))
    first, failed_first = apply_moves(boards.start, boards.n_blocks, actions)
    second, failed_second = apply_moves(boards.start, boards.n_blocks, actions)
    assert torch.equal(first, second) and torch.equal(failed_first, failed_second)
    for row in range(len(boards)):  # one episode at a time gives the same answer
        single, single_failed = apply_moves(boards.start[row : row + 1], boards.n_blocks[row : row + 1], actions[row : row + 1])
        assert torch.equal(single[0], first[row]) and single_failed[0] == failed_first[row]


def test_invalid_actions_are_refused():
    env = BlocksEnv()
    env.reset(board((0.0, 0.0)))
    with pytest.raises(ValueError, match="0..80"):
        env.step(torch.tensor([81]))
    with pytest.raises(ValueError, match="expected"):
        env.step(torch.tensor([0, 1]))


def test_recording_without_a_reward_logs_zero_rewards():
    """record() serves any way of choosing actions, with or without a shaped reward."""
    from zoo.blocks.procedural import procedural_split
    from zoo.blocks.rollout import EpisodeRunner

    examples = procedural_split("dev", transitions=2).examples[:3]
    log = EpisodeRunner().record(examples, lambda observation: torch.full((len(observation),), STOP))
    assert log["episodes"].tolist() == [0, 1, 2] and log["done"].all()
    assert log["rewards"].tolist() == [0.0, 0.0, 0.0]
