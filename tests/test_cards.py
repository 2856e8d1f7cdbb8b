"""Every model card carries the Hugging Face metadata header that ``zoo/cards.py`` renders from
the release's facts: the header on disk is the rendered one, every figure in it is one the
card's own tables report, and the Hub's own parser reads it."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tests.tools_support import REPO
from zoo.cards import CARD_FACTS, main, split_card

CARDS = REPO / "checkpoints" / "cards"


def test_every_card_in_the_tree_matches_its_rendered_header():
    done = subprocess.run([sys.executable, "-m", "zoo.cards", "--check"], cwd=REPO, capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert f"{len(CARD_FACTS)} model cards match" in done.stdout


@pytest.mark.parametrize("name", sorted(CARD_FACTS))
def test_the_hub_parser_reads_the_header_with_its_licence_library_and_figures(name):
    from huggingface_hub import ModelCard, metadata_load

    path = CARDS / f"{name}.md"
    metadata = metadata_load(path)
    assert metadata["library_name"] == "zoo" and metadata["license"] in {"mit", "apache-2.0"}
    assert {"license", "datasets", "metrics", "tags", "model-index"} <= set(metadata)
    card = ModelCard.load(path)
    assert card.text.lstrip().startswith(f"# {name}")  # the body stays the card it was
    values = sorted(result.metric_value for result in card.data.eval_results)
    assert values == sorted(float(figure.value) for figure in CARD_FACTS[name].figures)


def tampered_copy(tmp_path, name: str, old: str, new: str):
    cards = tmp_path / "cards"
    shutil.copytree(CARDS, cards)
    path = cards / f"{name}.md"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return cards


def test_a_tampered_figure_in_a_header_fails_the_check(tmp_path, capsys):
    cards = tampered_copy(tmp_path, "blocks-bandit", "value: 3.861", "value: 3.1")
    assert main(["--check", "--cards", str(cards)]) == 1
    assert "blocks-bandit.md: the metadata header differs" in capsys.readouterr().err


def test_a_figure_the_card_table_no_longer_reports_fails_the_check(tmp_path, capsys):
    cards = tampered_copy(tmp_path, "light-ir", "| light-ir (this) | 57.2 |", "| light-ir (this) | 58.0 |")
    assert main(["--check", "--cards", str(cards)]) == 1
    assert "the figure recall_at_1=57.2" in capsys.readouterr().err


def test_write_renders_a_missing_header_and_keeps_the_body(tmp_path):
    cards = tmp_path / "cards"
    shutil.copytree(CARDS, cards)
    original = (cards / "light-memnet.md").read_text()
    header, body = split_card(original)
    (cards / "light-memnet.md").write_text(body)
    assert main(["--check", "--cards", str(cards)]) == 1
    assert main(["--write", "--cards", str(cards)]) == 0
    assert (cards / "light-memnet.md").read_text() == original
