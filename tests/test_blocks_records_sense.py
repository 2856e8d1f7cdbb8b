"""Blocks records are checked for types and physical sense before anything scores them: a
boolean frame index, a coordinate that is not a number, a block off the board, two blocks
in one place, a goal before its start, a note in which no block (or more than one) moves and
an instruction too long to be one are refused in one line naming the record."""

from __future__ import annotations

import hashlib
import json

import pytest

from tests.conftest import DATA_ROOT, requires_real_blocks
from zoo.blocks import data
from zoo.blocks.data import MAX_INSTRUCTION_CHARACTERS, SPLITS, BlocksDataError, load_split, parse_episodes


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


THREE_FRAMES = [[[0.0, 0.1, 0.0], [0.5, 0.1, 0.5]], [[0.3, 0.1, 0.0], [0.5, 0.1, 0.5]],
                [[0.3, 0.1, 0.0], [0.5, 0.1, 0.5]]]


def test_a_goal_before_its_start_is_refused():
    message = _refusal([_episode(note={"start": 1, "finish": 0})])
    assert "the goal frame 0 is not after the start frame 1" in message


def test_a_note_that_ends_where_it_starts_is_refused():
    assert "the goal frame 1 is not after the start frame 1" in _refusal([_episode(note={"start": 1, "finish": 1})])


def test_a_note_in_which_no_block_moves_is_refused():
    message = _refusal([_episode(states=THREE_FRAMES, note={"start": 1, "finish": 2})])
    assert "no block moves from frame 1 to frame 2" in message


def test_a_note_in_which_two_blocks_move_is_refused():
    both = [[[0.0, 0.1, 0.0], [0.5, 0.1, 0.5]], [[0.3, 0.1, 0.0], [0.5, 0.1, -0.5]]]
    assert "blocks 1 and 2 move from frame 0 to frame 1; an A0 note is one block's move" in _refusal(
        [_episode(states=both)])


def test_one_move_spread_over_several_frames_is_a_record():
    [[transition]] = parse_episodes([_episode(states=THREE_FRAMES, note={"start": 0, "finish": 2})])
    assert (transition.start_frame, transition.goal_frame, transition.moved_block) == (0, 2, 0)


def test_an_instruction_longer_than_the_limit_is_refused(monkeypatch):
    monkeypatch.setattr(data, "MAX_INSTRUCTION_CHARACTERS", 20)
    [[transition]] = parse_episodes([_episode(note={"notes": ["a" * 20], "users": ["u"]})])
    assert transition.instructions == ("a" * 20,)
    message = _refusal([_episode(note={"notes": ["fine", "move " * 5], "users": ["u", "v"]})])
    assert "note 0: instruction 1 has 25 characters, more than the 20 an instruction may have" in message


def test_a_huge_instruction_in_a_data_file_stops_the_evaluation_at_once(tmp_path, capsys):
    """A 400,000-word instruction took 91 s and 3 GB to score; it is refused when the file is read."""
    from zoo.cli import main

    huge = _episode(note={"notes": ["move block one " * 133_334], "users": ["u"]})
    (tmp_path / "devset.json").write_text(json.dumps([huge]), encoding="utf-8")
    with pytest.raises(SystemExit) as exit:
        main(["eval", "blocks", "--model", "random", "--split", "dev", "--data-dir", str(tmp_path)])
    assert exit.value.code == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and "devset.json: episode 0 (board-7), note 0: instruction 0 has 2000010 characters" in error
    assert f"more than the {MAX_INSTRUCTION_CHARACTERS} an instruction may have" in error


@requires_real_blocks
def test_the_longest_real_instruction_is_far_below_the_limit():
    longest = max(len(e.instruction) for split in SPLITS for e in load_split(split).examples)
    assert longest * 4 < MAX_INSTRUCTION_CHARACTERS


@requires_real_blocks
@pytest.mark.parametrize("split, examples", [("train", 11_871), ("dev", 1_719), ("test", 3_177)])
def test_every_real_record_loads(split, examples):
    raw = json.loads((DATA_ROOT / "blocks" / f"{split}set.json").read_text(encoding="utf-8"))
    notes = sum(note["type"] == "A0" for episode in raw for note in episode["notes"])
    loaded = load_split(split)
    assert (len(loaded.transitions), len(loaded.examples)) == (notes, examples)


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
