"""Blocks records are checked for types and physical sense before anything scores them: a
boolean frame index, a coordinate that is not a number, a block off the board or two blocks
in one place are refused in one line naming the record."""

from __future__ import annotations

import hashlib

import pytest

from tests.conftest import requires_real_blocks
from zoo.blocks.data import BlocksDataError, load_split, parse_episodes


def _episode(states=None, note=None, **changes):
    episode = {
        "decoration": "digit",
        "filename": "board-7",
        "side_length": 0.1524,
        "states": states or [[[0.0, 0.1, 0.0], [0.5, 0.1, 0.5]], [[0.3, 0.1, 0.0], [0.5, 0.1, 0.5]]],
        "notes": [{"type": "A0", "start": 0, "finish": 1, "notes": ["move block 1 right"], "users": ["u"], **(note or {})}],
    }
    episode.update(changes)
    return episode


def _refusal(raw) -> str:
    with pytest.raises(BlocksDataError) as caught:
        parse_episodes(raw, source="devset.json")
    message = str(caught.value)
    assert "\n" not in message and "devset.json: episode 0 (board-7)" in message
    return message


def test_a_boolean_frame_index_is_refused():
    assert "got start True" in _refusal([_episode(note={"start": True})])


def test_twenty_blocks_stacked_at_one_point_are_refused():
    stacked = [[[0.2, 0.1, 0.2]] * 20, [[0.3, 0.1, 0.2]] + [[0.2, 0.1, 0.2]] * 19]
    assert "blocks 1 and 2 overlap on the start board (frame 0)" in _refusal([_episode(states=stacked)])


def test_blocks_overlapping_on_the_goal_board_are_refused():
    into_the_other = [[[0.0, 0.1, 0.0], [0.5, 0.1, 0.5]], [[0.45, 0.1, 0.5], [0.5, 0.1, 0.5]]]
    assert "blocks 1 and 2 overlap on the goal board (frame 1)" in _refusal([_episode(states=into_the_other)])


def test_touching_blocks_are_a_board():
    touching = [[[0.0, 0.1, 0.0], [0.1524, 0.1, 0.0]], [[0.0, 0.1, 0.3], [0.1524, 0.1, 0.0]]]
    [[transition]] = parse_episodes([_episode(states=touching)])
    assert transition.moved_block == 0


@pytest.mark.parametrize("coordinate", [True, "0.5", None])
def test_a_coordinate_must_be_a_number(coordinate):
    states = [[[coordinate, 0.1, 0.0], [0.5, 0.1, 0.5]], [[0.3, 0.1, 0.0], [0.5, 0.1, 0.5]]]
    assert f"block coordinates must be numbers, got {coordinate!r}" in _refusal([_episode(states=states)])


def test_a_block_off_the_board_is_refused():
    states = [[[0.0, 0.1, 0.0], [1.3, 0.1, 0.5]], [[0.3, 0.1, 0.0], [1.3, 0.1, 0.5]]]
    assert "on the board" in _refusal([_episode(states=states)])


@pytest.mark.parametrize("side_length", [True, 0.01, "0.1524"])
def test_the_block_size_is_the_simulators(side_length):
    assert "side_length must be 0.1524" in _refusal([_episode(side_length=side_length)])


def _fingerprint(split) -> str:
    digest = hashlib.sha256()
    for t in split.transitions:
        digest.update(repr((t.episode_id, t.start_frame, t.goal_frame, t.decoration, t.instructions, t.users,
                            t.block_size)).encode())
        digest.update(t.start.tobytes())
        digest.update(t.goal.tobytes())
    digest.update(split.tuning.tobytes())
    return digest.hexdigest()


@requires_real_blocks
@pytest.mark.parametrize("split, fingerprint", [
    # sha256 of every record as the loader returned them before these checks existed
    ("train", "3d469e134706aeea76f92b792f30aefd0577c0898ba13093df5bc57f5de8573e"),
    ("dev", "3c380cb1ec5b93872c7332fb7a3fe8e3d122bac0d81bc637a6d59a27a3954e62"),
    ("test", "874ce64891b32d96c2a8cebf8b7b2932dfb66d5ea05cab86a3be505ef0c109bd"),
])
def test_the_release_loads_unchanged(split, fingerprint):
    assert _fingerprint(load_split(split)) == fingerprint
