"""Long evaluations say how far they are, in plain lines when stderr is a log file."""

from __future__ import annotations

import pytest

from tests.conftest import LIGHT_DATA
from zoo.count_progress import CountProgress


def test_a_line_per_tenth_with_the_time_left_and_nothing_when_off(capsys):
    report = CountProgress(20, "examples ranked", progress=True)  # capsys: stderr is not a terminal
    for _ in range(10):
        report.advance(2)
    report.close()
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 10 and lines[0].startswith("examples ranked 2/20 (10%), ") and lines[0].endswith("s left")
    assert lines[-1].startswith("examples ranked 20/20 (100%)")
    quiet = CountProgress(20, "episodes", progress=False)
    quiet.advance(20)
    assert capsys.readouterr().err == ""


@pytest.mark.skipif(not (LIGHT_DATA / "fixture" / "light_data_fixture.pkl").is_file(), reason="no LIGHT fixture")
def test_zoo_eval_light_reports_progress_on_stderr_and_json_alone_on_stdout(capsys):
    import json

    from zoo.cli import main

    assert main(["eval", "light", "--model", "random", "--source", "fixture", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["n"] == 86
    assert any(line.startswith("examples ranked 86/86 (100%)") for line in captured.err.splitlines())

