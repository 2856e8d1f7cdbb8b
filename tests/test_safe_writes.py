"""Outputs replace only what zoo wrote: each way a write could lose a user's files, shown refused."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from zoo.cli import main
from zoo.errors import UnsafeDestinationError
from zoo.safe_writes import (
    MARKER_NAME,
    atomic_write_text,
    check_replaceable,
    replace_directory,
)


def test_light_sim_refuses_to_replace_a_users_directory(tmp_path, capsys):
    thesis = tmp_path / "v" / "thesis.tex"
    thesis.parent.mkdir()
    thesis.write_text("precious")
    assert main(["light", "sim", "--preset", "tiny", "--world", "authored", "--out", str(thesis.parent)]) == 2
    assert "refusing to write a corpus" in capsys.readouterr().err
    assert thesis.read_text() == "precious"


def test_the_working_directory_is_never_replaced(tmp_path, monkeypatch):
    (tmp_path / "notes.txt").write_text("mine")
    monkeypatch.chdir(tmp_path)
    for target in (".", str(tmp_path), ".."):
        with pytest.raises(UnsafeDestinationError, match="working directory"):
            check_replaceable(target, kind="corpus")
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_home_and_root_are_never_replaced(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UnsafeDestinationError, match="home"):
        check_replaceable("~", kind="corpus")
    with pytest.raises(UnsafeDestinationError, match="root"):
        check_replaceable("/", kind="corpus")


def test_save_pretrained_into_the_working_directory_is_refused(tmp_path, monkeypatch):
    from zoo.models.blocks import BlocksStop

    monkeypatch.chdir(tmp_path)
    (tmp_path / "keep.txt").write_text("keep")
    with pytest.raises(UnsafeDestinationError):
        BlocksStop().save_pretrained(".")
    assert (tmp_path / "keep.txt").read_text() == "keep"


def test_a_directory_zoo_wrote_is_replaced_whole(tmp_path):
    target = tmp_path / "out"
    with replace_directory(target, kind="corpus") as staging:
        (staging / "a.txt").write_text("first")
    assert (target / MARKER_NAME).is_file()
    with replace_directory(target, kind="corpus") as staging:
        (staging / "b.txt").write_text("second")
    assert sorted(p.name for p in target.iterdir()) == sorted([MARKER_NAME, "b.txt"])
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no staging or old copy left behind


def test_empty_and_missing_directories_are_fine_and_a_file_is_not(tmp_path):
    (tmp_path / "empty").mkdir()
    with replace_directory(tmp_path / "empty", kind="corpus") as staging:
        (staging / "x").write_text("x")
    with replace_directory(tmp_path / "new" / "deeper", kind="corpus") as staging:
        (staging / "x").write_text("x")
    (tmp_path / "file").write_text("data")
    with pytest.raises(UnsafeDestinationError, match="not a directory"):
        check_replaceable(tmp_path / "file", kind="corpus")


def test_a_failed_write_leaves_the_old_output(tmp_path):
    target = tmp_path / "out"
    with replace_directory(target, kind="corpus") as staging:
        (staging / "a.txt").write_text("first")
    with pytest.raises(RuntimeError):
        with replace_directory(target, kind="corpus") as staging:
            (staging / "partial.txt").write_text("half")
            raise RuntimeError("interrupted")
    assert (target / "a.txt").read_text() == "first"
    assert not (target / "partial.txt").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_outputs_honour_the_umask(tmp_path):
    previous = os.umask(0o022)
    try:
        with replace_directory(tmp_path / "out", kind="corpus") as staging:
            (staging / "a.txt").write_text("a")
        written = atomic_write_text(tmp_path / "results.json", "{}")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "out").stat().st_mode) == 0o755
    assert stat.S_IMODE(written.stat().st_mode) == 0o644


def test_symlinked_destination_is_refused(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "data.txt").write_text("d")
    Path(tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(UnsafeDestinationError):
        check_replaceable(tmp_path / "link", kind="corpus")
    assert (tmp_path / "real" / "data.txt").exists()


def test_a_directory_another_writer_swaps_away_while_it_is_checked_counts_as_gone(tmp_path, monkeypatch):
    """Concurrent writers of one corpus: between our look and our listing, another writer's
    swap may move the directory aside. What vanished holds nothing of the user's."""
    target = tmp_path / "corpus"
    target.mkdir()

    def swapped_away(directory):
        raise FileNotFoundError(2, "No such file or directory", str(directory))

    monkeypatch.setattr("zoo.safe_writes._listing", swapped_away)
    assert check_replaceable(target, kind="corpus") == target
