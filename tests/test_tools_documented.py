"""Every script under tools/ reproduces something a report shows: it answers ``--help`` and a
report in docs/ names it, so a reader can find the command behind each table and figure."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOOLS = sorted(path for path in (ROOT / "tools").iterdir() if path.suffix in {".py", ".sh"})
REPORTS = sorted((ROOT / "docs").glob("*.md"))


def test_there_are_tools_and_reports():
    assert TOOLS and REPORTS


@pytest.mark.parametrize("tool", TOOLS, ids=lambda path: path.name)
def test_a_tool_is_named_in_a_report(tool):
    naming = [report.name for report in REPORTS if f"tools/{tool.name}" in report.read_text(encoding="utf-8")]
    assert naming, f"tools/{tool.name} is named in no report under docs/"


@pytest.mark.slow
@pytest.mark.parametrize("tool", TOOLS, ids=lambda path: path.name)
def test_a_tool_answers_help(tool):
    command = [sys.executable, str(tool), "--help"] if tool.suffix == ".py" else ["bash", str(tool), "--help"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(done.stdout.strip().splitlines()) >= 2, f"{tool.name} --help says too little: {done.stdout!r}"
