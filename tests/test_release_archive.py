"""A release holds the software, never run state: ``.carry/`` (runs in progress, committed so they
can resume elsewhere) and ``runs/`` stay out of the source distribution and the wheel."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_run_state_stays_out_of_the_sdist_and_the_wheel(tmp_path):
    source = tmp_path / "source"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(".git", ".venv", "runs", "build", "dist", "checkpoints",
                                                                 "*.egg-info", "__pycache__", "wandb", "docs", ".carry"))
    (source / ".carry" / "bandit-s0" / "checkpoints").mkdir(parents=True)
    (source / ".carry" / "bandit-s0" / "checkpoints" / "last.ckpt").write_bytes(b"run state")
    (source / "runs" / "blocks").mkdir(parents=True)
    (source / "runs" / "blocks" / "metrics.jsonl").write_text("{}\n")
    for hook in ("build_sdist", "build_wheel"):
        done = subprocess.run([sys.executable, "-c", f"import sys; from setuptools import build_meta; build_meta.{hook}(sys.argv[1])",
                               str(tmp_path / "dist")], cwd=source, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
    sdist = next((tmp_path / "dist").glob("grounded_zoo-*.tar.gz"))
    wheel = next((tmp_path / "dist").glob("grounded_zoo-*.whl"))
    with tarfile.open(sdist) as archive:
        sdist_names = archive.getnames()
    wheel_names = zipfile.ZipFile(wheel).namelist()
    assert any(name.endswith("zoo/__init__.py") for name in sdist_names)
    for names in (sdist_names, wheel_names):
        assert not [name for name in names if "/.carry/" in f"/{name}" or "/runs/" in f"/{name}"]
