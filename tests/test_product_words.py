"""Product text speaks of the software, not of how it was made.

Every tracked text file (README, CHANGELOG, docs, model cards, recipes' YAML, scripts, and the
package's and tests' docstrings, comments and names) is read for words that belong to the story
of the work: numbered work sessions and stops, issue numbers, borrowed machines, and references
to design notes that are not in the repository. A report names hardware as hardware ("a 2-core
Xeon", "one NVIDIA H200") and cites this repository's own docs (``docs/blocks_environment.md §2.3``).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

STORY_WORDS = re.compile(
    r"|".join(
        [
            r"\bsessions? ?\d+",                     # "session 22", "sessions 5-28"
            r"(?-i:\bstops? \d+\b)(?!\.\d)",          # "stop 38" (not "Stop 6.23", the baseline)
            r"\bissues? ?#?\d{1,2}\b",               # "issue 16", "issues 11, 16"
            r"\blent (?:h200|h100|device|gpu)",
            r"\bdevice machine",
            r"\bthese machines\b",
            r"\bour build machines\b",
            r"\bthree-hour session",
            r"(?<!docs/blocks_environment\.md )(?<!docs/light_data\.md )\bspec §",  # a spec outside the repo
            r"\bshared/specs\b",
            r"\bdocs/runs\.md\b",
        ]
    ),
    re.IGNORECASE,
)

TEXT_SUFFIXES = {".md", ".py", ".yaml", ".yml", ".toml", ".sh", ".txt", ".cfg", ".in", ".html", ".json", ".jsonl"}
CODE_FOLDERS = ("zoo/", "tests/")
THIS_FILE = "tests/test_product_words.py"
MEASURED_RECORDS = ("docs/results/",)  # JSON lines the tools wrote when a figure was measured: data, not prose


def tracked_text_files() -> list[str]:
    listing = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    if listing.returncode != 0:
        pytest.skip("not a git checkout")
    names = [name for name in listing.stdout.split("\0") if name]
    return [
        name
        for name in names
        if (Path(name).suffix in TEXT_SUFFIXES or name.startswith(".ci/"))
        and name != THIS_FILE
        and not (name.startswith(MEASURED_RECORDS) and Path(name).suffix in {".json", ".jsonl"})
        and (ROOT / name).is_file()
    ]


def story_word_hits(part: str) -> list[str]:
    """``path:line: words`` for every hit in the product docs (``"docs"``) or in the code (``"code"``)."""
    hits = []
    for name in tracked_text_files():
        if name.startswith(CODE_FOLDERS) != (part == "code"):
            continue
        text = (ROOT / name).read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), start=1):
            for match in STORY_WORDS.finditer(line):
                hits.append(f"{name}:{number}: {match.group(0)!r}")
    return hits


def test_the_pattern_finds_the_story_and_spares_the_software():
    assert STORY_WORDS.search("measured in session 22")
    assert STORY_WORDS.search("CI took 483 s (stop 38)")
    assert STORY_WORDS.search("what issue 16 asks of the corpus")
    assert STORY_WORDS.search("trained on a lent H200")
    assert STORY_WORDS.search("see spec §6.4")
    assert not STORY_WORDS.search("see docs/blocks_environment.md §6.4")
    assert not STORY_WORDS.search("greedy STOP in 60-66% of dev episodes")
    assert not STORY_WORDS.search("Stop 6.23 / 6.12 on test")
    assert not STORY_WORDS.search("file an issue with the log attached")


@pytest.mark.parametrize("part", ["docs", "code"])
def test_product_text_has_no_words_about_how_it_was_made(part):
    hits = story_word_hits(part)
    assert not hits, f"{len(hits)} lines speak of how zoo was made:\n" + "\n".join(hits[:200])
