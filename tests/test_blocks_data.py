"""Loading the release into typed records (docs/blocks_environment.md §1), and refusing malformed files."""


import numpy as np
import pytest

from tests.conftest import requires_real_blocks
from zoo.blocks.data import BlocksDataError, load_split, parse_episodes
from zoo.blocks.procedural import procedural_split


@requires_real_blocks
@pytest.mark.parametrize(
    "split, transitions, examples, digit, tuning",
    [("train", 1319, 11871, 5868, 675), ("dev", 191, 1719, 864, 693), ("test", 353, 3177, 1548, 684)],
)
def test_split_sizes_match_the_paper(split, transitions, examples, digit, tuning):
    data = load_split(split)
    assert len(data.transitions) == transitions
    assert len(data.examples) == examples
    assert sum(e.decoration == "digit" for e in data.examples) == digit
    assert int(data.tuning.sum()) == tuning
    assert len(data.training_examples()) == examples - tuning


@requires_real_blocks
def test_every_transition_moves_exactly_one_block(blocks_dev):
    for transition in blocks_dev.transitions:
        moved = np.abs(transition.start - transition.goal).max(axis=1) > 1e-3
        assert moved.sum() == 1 and moved[transition.moved_block]
        assert len(transition.instructions) == 9


@requires_real_blocks
def test_stop_error_is_the_moved_blocks_distance(blocks_dev):
    errors = [np.linalg.norm(t.start - t.goal, axis=1).sum() / 0.1524 for t in blocks_dev.transitions]
    assert np.mean(errors) == pytest.approx(5.931, abs=5e-4)


def test_missing_data_names_every_way_to_provide_it(tmp_path, monkeypatch):
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="ZOO_DATA_DIR.*download"):
        load_split("dev")


def test_unknown_split_is_refused():
    with pytest.raises(ValueError, match="unknown Blocks split"):
        load_split("validation")


def _episode(**changes):
    episode = {
        "decoration": "digit",
        "filename": "x",
        "side_length": 0.1524,
        "states": [[[0.0, 0.1, 0.0], [0.5, 0.1, 0.5]], [[0.3, 0.1, 0.0], [0.5, 0.1, 0.5]]],
        "notes": [{"type": "A0", "start": 0, "finish": 1, "notes": ["move block 1 right"], "users": ["u"]}],
    }
    episode.update(changes)
    return episode


def test_a_wellformed_episode_parses():
    [[transition]] = parse_episodes([_episode()])
    assert transition.moved_block == 0 and transition.instructions == ("move block 1 right",)
    assert transition.start.tolist() == [[0.0, 0.0], [0.5, 0.5]]  # (x, z); the height is dropped


@pytest.mark.parametrize(
    "raw, message",
    [
        ({"not": "a list"}, "expected a JSON list"),
        ([_episode(decoration="plaid")], "decoration"),
        ([{k: v for k, v in _episode().items() if k != "states"}], "missing key 'states'"),
        ([_episode(states=[[[0.0, 0.1]]])], r"\[x, y, z\]"),
        ([_episode(notes=[{"type": "A0", "start": 0, "finish": 9, "notes": ["a"], "users": ["u"]}])], "outside"),
        ([_episode(notes=[{"type": "A0", "start": 0, "finish": 1, "notes": ["a", "b"], "users": ["u"]}])], "2 instructions but 1 users"),
    ],
)
def test_malformed_episodes_fail_with_a_clear_message(raw, message):
    with pytest.raises(BlocksDataError, match=message):
        parse_episodes(raw, source="broken.json")


def test_a_file_that_is_not_json_names_the_file(tmp_path):
    (tmp_path / "devset.json").write_text('[{"states": ')
    with pytest.raises(BlocksDataError, match="devset.json is not valid JSON"):
        load_split("dev", data_dir=tmp_path)


def test_procedural_boards_are_seeded_and_valid():
    first, again = procedural_split("dev", transitions=30), procedural_split("dev", transitions=30)
    assert [e.instruction for e in first.examples] == [e.instruction for e in again.examples]
    for transition in first.transitions:
        moved = np.abs(transition.start - transition.goal).max(axis=1) > 1e-3
        assert moved.sum() == 1
        others = np.delete(transition.goal, transition.moved_block, axis=0)
        gap = np.abs(others - transition.goal[transition.moved_block]).max(axis=1)
        assert (gap > 0.1544).all() and np.abs(transition.goal).max() <= 1.0
    assert {t.decoration for t in first.transitions} == {"digit", "logo"}
    assert "block" in first.examples[0].instruction


@requires_real_blocks
def test_download_fetches_verifies_and_caches_the_release(tmp_path, monkeypatch):
    """The download path end to end, served from a local copy instead of GitHub."""
    from tests.conftest import DATA_ROOT
    from zoo.blocks import data

    empty = tmp_path / "no-data"
    empty.mkdir()
    monkeypatch.setenv("ZOO_DATA_DIR", str(empty))
    monkeypatch.setattr(data, "OFFICIAL_URL", (DATA_ROOT / "blocks").as_uri() + "/{file}")
    split = load_split("dev", download=True)
    assert len(split.examples) == 1719
    cached = data.cache_dir() / "blocks" / "devset.json"
    assert cached.is_file()
    assert load_split("dev").examples[0].instruction == split.examples[0].instruction  # now from the cache


def test_a_download_with_the_wrong_hash_leaves_nothing_behind(tmp_path, monkeypatch):
    from zoo.blocks import data
    from zoo.hub import ChecksumError

    source = tmp_path / "devset.json"
    source.write_text("[]")
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path / "nowhere"))
    monkeypatch.setattr(data, "OFFICIAL_URL", tmp_path.as_uri() + "/{file}")
    with pytest.raises(ChecksumError):
        load_split("dev", download=True)
    assert not (data.cache_dir() / "blocks" / "devset.json").exists()
