"""Errors at the command line name flags and environment variables, not the library's Python
arguments; the library's own messages keep the API's words."""

from __future__ import annotations

import pytest

from zoo.cli import main
from zoo.cli.messages import cli_words


@pytest.fixture
def no_data(tmp_path, monkeypatch):
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path / "no-data"))
    monkeypatch.setenv("ZOO_CACHE", str(tmp_path / "no-cache"))


def test_a_missing_release_is_reported_in_flags(no_data, capsys):
    assert main(["light", "examples", "--split", "test"]) == 2
    error = capsys.readouterr().err.strip()
    assert "pass --data-dir" in error and "pass --download" in error and "Set $ZOO_DATA_DIR" in error
    assert "data_dir=" not in error and "download=True" not in error and "\n" not in error


def test_a_missing_world_is_reported_in_flags(no_data, capsys):
    with pytest.raises(SystemExit) as exit:
        main(["play", "light", "--world", "official"])
    error = capsys.readouterr().err.strip()
    assert exit.value.code == 2
    assert error == "zoo: error: light_environment.pkl not found (pass --data-dir or set $ZOO_DATA_DIR)"


def test_the_library_keeps_its_python_words(no_data):
    from zoo.light.release import load_release

    with pytest.raises(FileNotFoundError, match=r"pass data_dir=, .* pass download=True"):
        load_release()


def test_each_api_phrase_has_its_flag():
    assert cli_words("pass data_dir=, or pass download=True (--download) to fetch it") == \
        "pass --data-dir, or pass --download to fetch it"
    assert cli_words(FileNotFoundError("pass verify=False for your own corpus")) == "pass --no-verify for your own corpus"
    assert cli_words(KeyError("set ZOO_CACHE or $ZOO_DATA_DIR")) == "set $ZOO_CACHE or $ZOO_DATA_DIR"
    assert cli_words("data_dirs=3 stays") == "data_dirs=3 stays"
