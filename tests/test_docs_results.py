"""What the reports cite is there, and what is there is cited.

Every file under docs/results/ is a measured record that a report reads: a report (docs/*.md, a
model card, the studies' index, or a note under docs/results/ that a report names) names it by
its path, by a pattern (``light_vocab_growth*.jsonl``, ``light_v2_ablation_{6000,15000}/``) or
by the run folder that holds it; run logs are not records. And every repository path that the
reports, the READMEs and CONTRIBUTING.md name (a Markdown link, or a path such as
``studies/light_suite.sh`` or ``docs/results/blocks_seeds.png``) exists, so a moved or removed
file cannot leave a reader with a dead reference."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
RECORD_SUFFIXES = {".json", ".jsonl", ".md", ".png"}

REPORTS = sorted([*(ROOT / "docs").glob("*.md"), *(ROOT / "checkpoints" / "cards").glob("*.md"),
                  ROOT / "studies" / "README.md"])
NOTES = sorted(RESULTS.rglob("*.md"))
"""Markdown under docs/results/: a note on a run, itself a record that a report names."""
DOCUMENTS = sorted({*REPORTS, *NOTES, ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "checkpoints" / "README.md"})
"""Everything whose references are checked."""

CHECKED_ROOTS = ("tools/", "studies/", "benchmarks/", "recipes/", "docs/", "tests/", "zoo/", "checkpoints/cards/")
"""Where a named repository path must exist. Run directories (``runs/...``) and the folders a
command writes are outputs, not references; a release folder under checkpoints/ is the
manifest's business."""

PATH_CHARS = r"[\w./*{},-]"
NAMED_PATH = re.compile(rf"(?<![\w./-])((?:{'|'.join(map(re.escape, CHECKED_ROOTS))}){PATH_CHARS}*[\w*}}/])")
LINK = re.compile(r"\]\(([^()\s]+)\)")
PLACEHOLDER = re.compile(r"(?:^|/)[A-Z][A-Z0-9_]+(?:\.\w+)?(?:/|$)")
"""A segment such as NAME, DIR or RUN_O: a path to fill in, not one to look up."""


def expand_braces(text: str) -> list[str]:
    """``a{1,2}b`` -> ``a1b``, ``a2b`` (the shell's brace expansion, nested braces included)."""
    found = re.search(r"\{([^{}]*)\}", text)
    if not found:
        return [text]
    return [name for choice in found.group(1).split(",")
            for name in expand_braces(text[:found.start()] + choice + text[found.end():])]


def patterns_named(text: str) -> list[str]:
    """Every glob or brace pattern in ``text`` that names files, as paths relative to docs/results/
    where it says ``results/`` (Markdown emphasis such as ``**bold**`` is no pattern)."""
    patterns = []
    for token in re.findall(rf"{PATH_CHARS}+", text):
        token = token.strip(".,")
        if "**" in token or not re.match(r"[\w./-]{3,}[*{]", token):
            continue
        patterns += [name.split("results/", 1)[-1] for name in expand_braces(token)]
    return patterns


def is_referenced(relative: str, text: str, patterns: list[str]) -> bool:
    """Whether ``text`` names the record at ``relative`` (a path under docs/results/): the path
    itself, a folder that holds it (``table6-8000/``), or a pattern matching either."""
    parts = relative.split("/")
    folders = ["/".join(parts[:depth]) + "/" for depth in range(1, len(parts))]
    if re.search(rf"(?<![\w.-]){re.escape(relative)}(?![\w-])", text):
        return True
    if any(re.search(rf"(?<![\w.-]){re.escape(folder)}", text) for folder in folders):
        return True
    return any(fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(name.rstrip("/"), pattern.rstrip("/"))
               for name in [relative, *folders] for pattern in patterns)


def records() -> list[str]:
    return sorted(path.relative_to(RESULTS).as_posix() for path in RESULTS.rglob("*") if path.is_file())


def reports_text() -> str:
    return "\n".join(path.read_text(encoding="utf-8") for path in [*REPORTS, *NOTES] if path.is_file())


def heading_anchors(markdown: str) -> set[str]:
    """The anchors a Markdown page's headings get (GitHub's rule), fenced code left out."""
    prose = re.sub(r"^```.*?^```", "", markdown, flags=re.MULTILINE | re.DOTALL)
    headings = re.findall(r"^#{1,6}\s+(.+?)\s*$", prose, flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


def dead_link(document: Path, target: str) -> bool:
    """Whether a relative link names no file, or a section its Markdown page does not have."""
    path, _, anchor = target.partition("#")
    if re.match(r"[a-z][a-z0-9+.-]*:", path):
        return False  # a web address
    page = document.parent / path if path else document
    if not page.exists():
        return True
    return bool(anchor) and page.suffix == ".md" and anchor not in heading_anchors(page.read_text(encoding="utf-8"))


def missing_paths(document: Path) -> list[str]:
    """The repository paths and links in ``document`` that name nothing."""
    text = document.read_text(encoding="utf-8")
    missing = [target for target in LINK.findall(text) if dead_link(document, target)]
    for named in NAMED_PATH.findall(text):
        if PLACEHOLDER.search(named):
            continue
        if not any(ROOT.glob(name.rstrip("/")) if re.search(r"[*?\[]", name) else (ROOT / name).exists()
                   for name in expand_braces(named)):
            missing.append(named)
    return missing


# ---------------------------------------------------------------------- the matchers, by example
def test_a_record_is_named_by_its_path_its_folder_or_a_pattern():
    text = ("`docs/results/blocks_seeds.json`, every run in `table6-8000/`, "
            "`light_vocab_growth*.jsonl` and `docs/results/light_v2_ablation_{6000,15000}/paired-*.json`")
    patterns = patterns_named(text)
    assert is_referenced("blocks_seeds.json", text, patterns)
    assert is_referenced("table6-8000/action-all.json", text, patterns)
    assert is_referenced("light_vocab_growth_t09_tiny.jsonl", text, patterns)
    assert is_referenced("light_v2_ablation_15000/paired-dialogue_objects-vs-dialogue.json", text, patterns)
    assert not is_referenced("light_v2_ablation_15000/dialogue-results.json", text, patterns)
    assert not is_referenced("blocks_seeds.png", text, patterns)
    assert not is_referenced("blocks_seeds.json5", "`blocks_seeds.json`", [])
    assert patterns_named("**Bold** and *emphasis*, 3.60**") == []


def test_a_dead_path_or_link_is_found_and_a_placeholder_is_not(tmp_path):
    document = tmp_path / "report.md"
    document.write_text("Run `python studies/no_such_study.py` or `tools/rewrite_release.py checkpoints/NAME`; "
                        "see [the seeds](../docs/gone.md) and `docs/results/light_sim_v2_tiny_memories{2,4}_report.jsonl`,"
                        " `docs/results/NAME.json`, [a page](https://example.org/x.md), [here](#the-section) and"
                        " [there](#no-such-section).\n\n## The section\n\n```\n# A comment, not a heading\n```\n")
    assert missing_paths(document) == ["../docs/gone.md", "#no-such-section", "studies/no_such_study.py"]
    assert heading_anchors((ROOT / "docs" / "blocks.md").read_text(encoding="utf-8")) >= {
        "the-papers-reference-policies-tables-2-and-3", "dagger-on-short-budgets"}


# ---------------------------------------------------------------------- the repository
def test_there_are_records_and_reports():
    assert records() and all(path.is_file() for path in REPORTS)


@pytest.mark.parametrize("record", records())
def test_every_record_under_docs_results_is_named_by_a_report(record):
    text = reports_text()
    assert is_referenced(record, text, patterns_named(text)), (
        f"docs/results/{record} is named by no report (docs/*.md, a model card, studies/README.md): "
        "name it where its figure is shown, or git rm it")


def test_docs_results_holds_records_not_run_logs():
    others = [record for record in records() if Path(record).suffix not in RECORD_SUFFIXES]
    assert not others, f"not a measured record (JSON, JSON lines, Markdown, PNG): {others}"


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.relative_to(ROOT).as_posix())
def test_every_path_a_document_names_exists(document):
    assert missing_paths(document) == [], f"{document.relative_to(ROOT)} names paths that do not exist"
