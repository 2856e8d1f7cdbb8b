"""The release number has one source: ``zoo.__version__``, which the wheel and ``zoo --version`` share."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import zoo
from zoo.cli import main

ROOT = Path(__file__).resolve().parents[1]
tomllib = pytest.importorskip("tomllib")  # Python 3.11+

def test_zoo_version_prints_the_release(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"zoo {zoo.__version__}"

def test_the_version_is_a_release_number():
    assert re.fullmatch(r"\d+\.\d+\.\d+", zoo.__version__)

def test_pyproject_reads_the_version_from_the_package():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"]
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "zoo.__version__"}

def test_the_changelog_has_a_section_for_this_version():
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"## [{zoo.__version__}]" in changelog
