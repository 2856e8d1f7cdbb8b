"""LIGHT release loading: restricted unpickling, sha256 before unpickling, schema, splits."""

from __future__ import annotations

import json
import pickle
import sys
import types
from pathlib import Path

import pytest

from tests.conftest import LIGHT_DATA

from zoo.light import release
from zoo.light.records import Agent, Episode, LightDataError, Setting, Turn, parse_episode, parse_episodes
from zoo.light.release import (
    RELEASE_FILES,
    ReleaseChecksumError,
    load_episodes,
    load_raw,
    load_release,
    locate,
    sha256_of,
    split_light_data,
    split_names,
    split_positions,
)
from zoo.light.safe_pickle import CorruptPickleError, UnsafePickleError, dump_pickle, load_pickle, loads_pickle

LIGHT = LIGHT_DATA
FIXTURE = LIGHT / "fixture" / "light_data_fixture.pkl"
FIXTURE_JSON = LIGHT / "fixture" / "light_data_fixture.json"

needs_data = pytest.mark.skipif(not FIXTURE.is_file(), reason=f"LIGHT fixture not found under {LIGHT}")


class Boom:
    """A class defined here: pickling an instance names the global ``<module>.Boom``."""


class Payload:
    """Unpickling this would call ``Path.touch(marker)``: proof that code ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def tiny_episode(n_turns: int = 2, tag: str = "") -> Episode:
    turns = tuple(
        Turn(speech=f"line {t}{tag}", available_actions=("hug b",) if t % 2 == 0 else ("hug a",),
             room_objects=("a rock",), carrying=("a cup",) if t % 2 == 0 else ())
        for t in range(n_turns)
    )
    return Episode(Setting("Hall", "Castle", "A hall."), (Agent("a", "I am a."), Agent("b", "I am b.")), turns)


# -- restricted unpickling ---------------------------------------------------------------------------


def test_plain_data_round_trips_through_dump_and_load(tmp_path):
    data = [{"a": [1, 2.5, None, True], "b": ("x", b"y"), "c": {frozenset({1}), 2}}]
    path = dump_pickle(data, tmp_path / "sub" / "plain.pkl")
    assert load_pickle(path) == data
    assert [p.name for p in path.parent.iterdir()] == ["plain.pkl"]  # no temporary left behind


def test_a_global_is_refused_with_its_name_and_the_file(tmp_path):
    path = tmp_path / "evil.pkl"
    path.write_bytes(pickle.dumps([{"x": Boom()}]))
    with pytest.raises(UnsafePickleError) as error:
        load_pickle(path)
    message = str(error.value)
    assert f"{Boom.__module__}.Boom" in message and str(path) in message and "refusing" in message


def test_a_reduce_payload_is_refused_and_never_executed(tmp_path):
    marker = tmp_path / "ran"
    path = tmp_path / "payload.pkl"
    path.write_bytes(pickle.dumps({"speech": [Payload(marker)]}, protocol=2))
    with pytest.raises(UnsafePickleError, match="refusing to unpickle the global"):
        load_pickle(path)
    assert not marker.exists()
    for protocol in range(0, pickle.HIGHEST_PROTOCOL + 1):
        with pytest.raises(UnsafePickleError):
            loads_pickle(pickle.dumps(Payload(marker), protocol=protocol))
    assert not marker.exists()


def test_os_system_global_is_refused():
    # The classic exploit: GLOBAL os.system + REDUCE, written by hand (protocol 0).
    data = b"cos\nsystem\n(S'echo pwned'\ntR."
    with pytest.raises(UnsafePickleError, match=r"os\.system|posix\.system"):
        loads_pickle(data, source="exploit.pkl")


def test_persistent_ids_are_refused():
    class WithPid(pickle.Pickler):
        def persistent_id(self, obj):
            return "ref" if obj == "secret" else None

    import io

    buffer = io.BytesIO()
    WithPid(buffer, protocol=2).dump(["secret"])
    with pytest.raises(UnsafePickleError, match="persistent id"):
        loads_pickle(buffer.getvalue())


def test_truncated_empty_and_padded_pickles_are_refused_clearly(tmp_path):
    good = pickle.dumps([{"speech": ["hello"] * 50}], protocol=4)
    truncated = tmp_path / "truncated.pkl"
    truncated.write_bytes(good[: len(good) // 2])
    with pytest.raises(CorruptPickleError, match="truncated") as error:
        load_pickle(truncated)
    assert str(truncated) in str(error.value)
    empty = tmp_path / "empty.pkl"
    empty.write_bytes(b"")
    with pytest.raises(CorruptPickleError, match="truncated or empty"):
        load_pickle(empty)
    padded = tmp_path / "padded.pkl"
    padded.write_bytes(good + b"junk")
    with pytest.raises(CorruptPickleError, match="after the end"):
        load_pickle(padded)
    with pytest.raises(CorruptPickleError):
        loads_pickle(b"not a pickle at all")


def test_dump_refuses_objects_and_leaves_nothing(tmp_path):
    with pytest.raises(TypeError, match="Boom"):
        dump_pickle([Boom()], tmp_path / "out.pkl")
    assert list(tmp_path.iterdir()) == []


def test_dump_replaces_existing_file_atomically(tmp_path):
    path = tmp_path / "corpus.pkl"
    dump_pickle([1], path)
    dump_pickle([2], path)
    assert load_pickle(path) == [2]
    assert [p.name for p in tmp_path.iterdir()] == ["corpus.pkl"]


# -- release files and sha256 ------------------------------------------------------------------------


def test_release_files_are_the_spec_ones():
    expected = {
        "light_data": ("light_data.pkl", "http://parl.ai/downloads/light/light-dialog-processed-small7.pkl",
                       "7c83cf49818586db9999ea67a4a6ad087afbd91c26ed629a9f00e21d0b84058f"),
        "light_unseen_data": ("light_unseen_data.pkl", "http://parl.ai/downloads/light/light-unseen-processed2.pkl",
                              "489b98d08dd94eaf1ba95439d04200ccc54623ade056839f87a5c4207bc5699c"),
        "light_environment": ("light_environment.pkl", "http://parl.ai/downloads/light/light-environment.pkl",
                              "162389202f22063e1c32af7f9261aac13d20fc05598388d1e9748735996ec016"),
    }
    assert {k: (f.filename, f.url, f.sha256) for k, f in RELEASE_FILES.items()} == expected


def test_wrong_sha256_is_refused_before_unpickling(tmp_path):
    marker = tmp_path / "ran"
    (tmp_path / "light_data.pkl").write_bytes(pickle.dumps([Payload(marker)], protocol=2))
    (tmp_path / "light_unseen_data.pkl").write_bytes(pickle.dumps([], protocol=2))
    with pytest.raises(ReleaseChecksumError) as error:
        load_release(data_dir=tmp_path)
    message = str(error.value)
    actual = sha256_of(tmp_path / "light_data.pkl")
    assert RELEASE_FILES["light_data"].sha256 in message and actual in message
    assert "not unpickled" in message and "verify=False" in message
    assert not marker.exists()


@needs_data
def test_fixture_has_no_published_hash_and_needs_verify_false():
    with pytest.raises(ReleaseChecksumError, match="published LIGHT file"):
        load_episodes(FIXTURE)
    assert len(load_episodes(FIXTURE, verify=False)) == 9


def test_matching_sha256_passes(tmp_path):
    path = tmp_path / "corpus.pkl"
    dump_pickle([tiny_episode().to_raw()], path)
    raw = load_raw(path, expected_sha256=sha256_of(path))
    assert parse_episodes(raw)[0] == tiny_episode()
    with pytest.raises(ReleaseChecksumError, match="expected sha256 0+"):
        load_raw(path, expected_sha256="0" * 64)


def test_locate_order_and_download(tmp_path, monkeypatch):
    own, root, cache = tmp_path / "own", tmp_path / "root", tmp_path / "cache"
    for folder in (own, root / "light", cache / "light"):
        folder.mkdir(parents=True)
    monkeypatch.setenv("ZOO_CACHE", str(cache))
    monkeypatch.delenv("ZOO_DATA_DIR", raising=False)
    with pytest.raises(FileNotFoundError, match="download=True"):
        locate("light_data")
    (cache / "light" / "light_data.pkl").write_bytes(b"c")
    assert locate("light_data") == cache / "light" / "light_data.pkl"
    monkeypatch.setenv("ZOO_DATA_DIR", str(root))
    (root / "light" / "light_data.pkl").write_bytes(b"r")
    assert locate("light_data") == root / "light" / "light_data.pkl"
    with pytest.raises(FileNotFoundError, match="not found in"):
        locate("light_data", data_dir=own)
    (own / "light_data.pkl").write_bytes(b"o")
    assert locate("light_data", data_dir=own) == own / "light_data.pkl"
    with pytest.raises(ValueError, match="unknown LIGHT release file"):
        locate("light_chats")

    calls = []
    fake_hub = types.ModuleType("zoo.hub")

    def download_file(url, sha256, dest, progress=True):
        calls.append((url, sha256, dest))
        return dest

    fake_hub.download_file = download_file
    monkeypatch.setitem(sys.modules, "zoo.hub", fake_hub)
    dest = locate("light_unseen_data", download=True)
    unseen = RELEASE_FILES["light_unseen_data"]
    assert calls == [(unseen.url, unseen.sha256, cache / "light" / "light_unseen_data.pkl")] and dest == calls[0][2]


# -- schema ------------------------------------------------------------------------------------------


@needs_data
def test_fixture_pickle_and_json_parse_to_the_same_records():
    from_pickle = load_episodes(FIXTURE, verify=False)
    from_json = parse_episodes(json.loads(FIXTURE_JSON.read_text(encoding="utf-8")), str(FIXTURE_JSON))
    assert from_pickle == from_json
    assert [len(e) for e in from_pickle] == [10, 10, 10, 10, 1, 8, 9, 14, 14]
    first = from_pickle[0]
    assert first.setting.name == "Castle Maids' Room" and first.agents[1].name == "worker"
    assert first.turns[3].action == "get brush" and first.turns[9].emote == "smile"
    assert first.objects[0].name == "a floor" and first.speaker(3).name == "worker"


@needs_data
def test_records_round_trip_to_the_raw_schema(tmp_path):
    raw = load_pickle(FIXTURE)
    episodes = parse_episodes(raw)
    back = [episode.to_raw() for episode in episodes]
    assert back == raw
    assert [list(e) for e in back] == [list(e) for e in raw]  # key order too
    assert [list(e["setting"]) for e in back] == [list(e["setting"]) for e in raw]
    path = dump_pickle(back, tmp_path / "light_data.pkl")
    assert load_episodes(path, verify=False) == episodes


def test_optional_columns_and_extra_keys_round_trip():
    raw = tiny_episode(3).to_raw()
    assert "character" not in raw and "room_agents" not in raw and "background" not in raw["setting"]
    raw["context"] = ["look", "look", "look"]
    raw["available_actions"] = tuple(tuple(a) for a in raw["available_actions"])  # tuples are accepted
    episode = parse_episode(raw)
    assert episode.extra == {"context": ["look", "look", "look"]}
    assert episode.to_raw()["context"] == ["look", "look", "look"]
    assert episode.to_raw()["available_actions"] == [["hug b"], ["hug a"], ["hug b"]]


@pytest.mark.parametrize(
    "change, where",
    [
        (lambda r: r.pop("speech"), "missing key(s) 'speech'"),
        (lambda r: r["speech"].__setitem__(1, 7), "field 'speech'[1]: expected a string or None, got int"),
        (lambda r: r["emote"].append(None), "per-turn lists differ in length: speech has 2, emote has 3"),
        (lambda r: r["agents"].pop(), "field 'agents': expected 2 agents, got 1"),
        (lambda r: r["setting"].pop("category"), "field 'setting': missing key 'category'"),
        (lambda r: r["available_actions"].__setitem__(0, None), "field 'available_actions'[0]: expected a list"),
        (lambda r: r["carrying"][0].append(3), "field 'carrying'[0][1]: expected a string, got int"),
        (lambda r: r.__setitem__("all_descriptions", []), "field 'all_descriptions': expected a dict"),
        (lambda r: r["agents"][1].__setitem__("persona", None), "field 'agents'[1]['persona']: expected a string"),
    ],
)
def test_malformed_episodes_name_the_episode_and_field(change, where):
    good = tiny_episode().to_raw()
    bad = tiny_episode().to_raw()
    change(bad)
    with pytest.raises(LightDataError) as error:
        parse_episodes([good, bad], source="light_data.pkl")
    assert str(error.value).startswith("light_data.pkl: episode 1: ")
    assert where in str(error.value)


def test_a_file_that_is_not_a_list_is_refused(tmp_path):
    path = dump_pickle({"not": "episodes"}, tmp_path / "x.pkl")
    with pytest.raises(LightDataError, match="expected a list of episode dicts, got dict"):
        load_episodes(path, verify=False)


# -- splits ------------------------------------------------------------------------------------------


@needs_data
def test_split_positions_match_split_indices_json():
    reference = json.loads((LIGHT / "split_indices.json").read_text())
    test, valid = split_positions()
    assert len(test) == 1000 and len(valid) == 500 and reference["pool_size"] == 3365
    assert sorted(test) == reference["test"] and sorted(valid) == reference["valid"]
    assert test[:10] == reference["test_in_shuffle_order_first10"]
    assert valid[:10] == reference["valid_in_shuffle_order_first10"]


def test_split_positions_first_ten_as_stated_in_the_spec():
    test, valid = split_positions()
    assert test[:10] == [2709, 2871, 3756, 1687, 4400, 4152, 1404, 3432, 2820, 1907]
    assert valid[:10] == [2065, 3335, 3766, 1757, 2229, 2962, 2925, 2382, 4370, 3167]


def test_split_rule_on_a_corpus_laid_out_like_light_data():
    names = split_names(10038)
    assert names.count("test") == 1000 and names.count("valid") == 500 and names.count("train") == 8538
    assert all(name == "train" for name in names[:1368] + names[4733:])
    episodes = [tiny_episode(2, tag=f" #{i}") for i in range(4733)]
    splits = split_light_data(episodes)
    test, valid = split_positions()
    assert splits["test"] == [episodes[i] for i in sorted(test)]  # file order, not shuffle order
    assert splits["valid"] == [episodes[i] for i in sorted(valid)]
    assert len(splits["train"]) == 4733 - 1500
    with pytest.raises(LightDataError, match="at least 4733 episodes; this file has 9"):
        split_names(9)


@pytest.mark.slow
def test_load_release_splits_and_unseen(tmp_path):
    episodes = [tiny_episode(2, tag=f" #{i}") for i in range(4733)]
    dump_pickle([e.to_raw() for e in episodes], tmp_path / "light_data.pkl")
    dump_pickle([tiny_episode(4, tag=" unseen").to_raw()] * 3, tmp_path / "light_unseen_data.pkl")
    with pytest.raises(ReleaseChecksumError):
        load_release(data_dir=tmp_path)
    splits = load_release(data_dir=tmp_path, verify=False)
    assert [len(splits[s]) for s in release.SPLITS] == [3233, 500, 1000, 3]
    assert splits["test_unseen"][0].turns[0].speech == "line 0 unseen"


# -- episode length ----------------------------------------------------------------------------------


def _fixture_dir_with(tmp_path: Path, episodes: list[Episode]) -> Path:
    """A LIGHT data directory whose fixture holds ``episodes`` (each speech turn listed as real)."""
    fixture = tmp_path / "light" / "fixture"
    fixture.mkdir(parents=True)
    dump_pickle([e.to_raw() for e in episodes], fixture / "light_data_fixture.pkl")
    meta = [{"real_fields": [f"speech[0..{len(e.turns) - 1}]"]} for e in episodes]
    (fixture / "light_data_fixture_meta.json").write_text(json.dumps(meta), encoding="utf-8")
    return tmp_path / "light"


def test_an_episode_longer_than_the_limit_is_refused_naming_the_file_and_the_limit(tmp_path, monkeypatch):
    from zoo.light import records
    from zoo.light.fixture import load_fixture

    monkeypatch.setattr(records, "MAX_EPISODE_TURNS", 20)
    assert len(load_fixture(_fixture_dir_with(tmp_path / "ok", [tiny_episode(20)])).episodes[0].turns) == 20
    with pytest.raises(LightDataError) as error:
        load_fixture(_fixture_dir_with(tmp_path / "long", [tiny_episode(2), tiny_episode(21)]))
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(str(tmp_path / "long" / "light" / "fixture" / "light_data_fixture.pkl") + ": episode 1: ")
    assert "21 turns, more than the 20 an episode may have" in message


def test_evaluating_a_fixture_with_an_overlong_episode_stops_at_once_in_one_line(tmp_path, capsys):
    """Each example's context repeats its view's history, so a 20,000-turn episode would build
    gigabytes of contexts; the episode is refused when the file is read instead."""
    from zoo.cli import main
    from zoo.light.records import MAX_EPISODE_TURNS

    data = _fixture_dir_with(tmp_path, [tiny_episode(14, " a"), tiny_episode(MAX_EPISODE_TURNS + 1, " b")])
    assert main(["eval", "light", "--source", "fixture", "--model", "random", "--data-dir", str(data)]) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and "light_data_fixture.pkl: episode 1" in error
    assert f"{MAX_EPISODE_TURNS + 1} turns, more than the {MAX_EPISODE_TURNS} an episode may have" in error


@needs_data
def test_the_real_episodes_are_far_below_the_length_limit():
    from zoo.light.records import MAX_EPISODE_TURNS

    episodes = load_episodes(FIXTURE, verify=False)
    assert max(len(e.turns) for e in episodes) * 10 <= MAX_EPISODE_TURNS


def test_light_sim_cannot_be_asked_for_chats_its_loader_would_refuse():
    from zoo.light.records import MAX_EPISODE_TURNS
    from zoo.light.sim.config import SimConfig

    assert SimConfig(max_turns=MAX_EPISODE_TURNS).max_turns == MAX_EPISODE_TURNS
    with pytest.raises(ValueError, match=f"max_turns must be at most {MAX_EPISODE_TURNS}"):
        SimConfig(max_turns=MAX_EPISODE_TURNS + 1)
