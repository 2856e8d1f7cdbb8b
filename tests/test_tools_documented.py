"""Scripts outside the package say where they belong. Every script in tools/ is a release tool
(it trains, chooses, builds or publishes what a release holds) and a report, a model card or a
README names it; every script in studies/ (the experiments behind a report's study) is in the
index, studies/README.md, with the table or figure it made. Both answer ``--help``, the studies
stay out of the sdist and the wheel, and no test of the library imports a study."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT_SUFFIXES = {".py", ".sh"}
TOOLS = sorted(path for path in (ROOT / "tools").iterdir() if path.suffix in SCRIPT_SUFFIXES)
STUDIES = sorted(path for path in (ROOT / "studies").iterdir() if path.suffix in SCRIPT_SUFFIXES)
STUDY_INDEX = ROOT / "studies" / "README.md"
REPORTS = sorted([*(ROOT / "docs").glob("*.md"), *(ROOT / "checkpoints" / "cards").glob("*.md"),
                  ROOT / "README.md", ROOT / "checkpoints" / "README.md"])


def indexed_studies() -> list[str]:
    """The script names in the first column of the index's table."""
    return re.findall(r"^\| `([\w.-]+\.(?:py|sh))` \|", STUDY_INDEX.read_text(encoding="utf-8"), re.MULTILINE)


def test_there_are_tools_studies_and_reports():
    assert TOOLS and STUDIES and REPORTS


@pytest.mark.parametrize("tool", TOOLS, ids=lambda path: path.name)
def test_a_release_tool_is_named_in_a_report_or_readme(tool):
    naming = [report.name for report in REPORTS if f"tools/{tool.name}" in report.read_text(encoding="utf-8")]
    assert naming, f"tools/{tool.name} is named in no report, model card or README; a study belongs in studies/"


@pytest.mark.parametrize("study", STUDIES, ids=lambda path: path.name)
def test_a_study_is_in_the_index(study):
    assert study.name in indexed_studies(), f"studies/{study.name} has no row in studies/README.md"


def test_the_index_lists_each_study_once_and_only_studies_that_exist():
    names = indexed_studies()
    assert len(names) == len(set(names)), "a study has two rows in studies/README.md"
    assert sorted(names) == [study.name for study in STUDIES]


def test_the_studies_stay_out_of_the_sdist_and_the_wheel():
    assert re.search(r"^prune studies$", (ROOT / "MANIFEST.in").read_text(encoding="utf-8"), re.MULTILINE)
    found = re.search(r"\[tool\.setuptools\.packages\.find\]\s*include = \[([^\]]*)\]",
                      (ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert found and found.group(1).strip() == '"zoo*"', "the wheel holds only the zoo package"


def imports_a_study(source: str) -> bool:
    """Whether a test module loads a script from studies/ (by the studies' loader or by file)."""
    loads_a_file = re.search(r"spec_from_file_location|import_module|runpy|SourceFileLoader", source)
    return bool(re.search(r"\bload_study\b|\bstudy_support\b", source) or (loads_a_file and "studies" in source))


def test_no_library_test_imports_a_study():
    assert imports_a_study('spec_from_file_location("x", REPO / "studies" / "x.py")')
    assert not imports_a_study('spec_from_file_location("x", REPO / "tools" / "x.py")')
    importing = [path.name for path in sorted((ROOT / "tests").glob("*.py"))
                 if path.name != Path(__file__).name and imports_a_study(path.read_text(encoding="utf-8"))]
    assert not importing, f"these tests import a study; move them to studies/tests/: {importing}"


@pytest.mark.slow
@pytest.mark.parametrize("script", TOOLS + STUDIES, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_a_script_answers_help(script):
    command = [sys.executable, str(script), "--help"] if script.suffix == ".py" else ["bash", str(script), "--help"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(done.stdout.strip().splitlines()) >= 2, f"{script.name} --help says too little: {done.stdout!r}"
