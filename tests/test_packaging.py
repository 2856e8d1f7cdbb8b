"""What the package index sees: a distribution name of zoo's own, a license file that says
what pyproject says, and no upper cap on torch."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
tomllib = pytest.importorskip("tomllib")  # Python 3.11+


def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_the_distribution_is_grounded_zoo_and_the_command_is_zoo():
    assert project()["name"] == "grounded-zoo"  # `zoo` on the index is another project
    assert project()["scripts"] == {"zoo": "zoo.cli:main"}


def test_the_license_file_is_the_license_pyproject_names():
    assert project()["license"] == "MIT" and project()["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().startswith("MIT License\n")


def test_torch_is_not_capped_from_above():
    torch = next(requirement for requirement in project()["dependencies"] if requirement.startswith("torch"))
    assert "<" not in torch and ">=" in torch
