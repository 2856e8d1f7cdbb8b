"""The model cards' Hugging Face metadata header, rendered from one template.

A model hub reads a card's YAML front matter (``license``, ``datasets``, ``metrics``, ``tags``,
``library_name``, ``pipeline_tag``, ``model-index``), not its Markdown. Every card in
``checkpoints/cards/`` gets that header from :func:`render_header`, and the facts it renders
come from two places only:

* the release's manifest entry (``zoo/manifest.json``): the licence, which the manifest already
  records for every install;
* :data:`CARD_FACTS` below: what the manifest does not say (the training data as a dataset
  name, tags, the task) and the figures the card's own tables report, each copied as the table
  writes it (``"3.120"``, ``"73.7"``).

So that a figure cannot drift from the card it summarises, :func:`check_card` requires each
one to appear in a table row of the card body, and the rendered header to be the one the card
holds. ``python -m zoo.cards --check`` does that for every card (exit status 1 on any
difference); ``--write`` renders the headers into the cards, leaving their bodies as they are.
The header is parsed back with ``huggingface_hub.ModelCard``, the Hub's own reader, so a header
the Hub would reject fails here too.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CARD_FACTS", "CardFacts", "Figure", "check_card", "render_card", "render_header", "split_card"]

LIBRARY_NAME = "zoo"
FRONT_MATTER = re.compile(r"\A---\n(?P<yaml>.*?\n)---\n", re.DOTALL)
LICENSES = {"MIT": "mit", "Apache-2.0": "apache-2.0"}
"""Manifest licence names (SPDX) to the Hub's licence identifiers."""


@dataclass(frozen=True)
class Figure:
    """One measured figure of a card's table: the metric, the data it was measured on, and the
    number as the table writes it."""

    metric_type: str
    metric_name: str
    dataset_type: str
    dataset_name: str
    split: str
    value: str


@dataclass(frozen=True)
class CardFacts:
    """What a card's header says beyond the manifest's licence."""

    task_type: str
    task_name: str
    datasets: tuple[str, ...]
    tags: tuple[str, ...]
    figures: tuple[Figure, ...]
    pipeline_tag: str | None = None

    def metric_types(self) -> list[str]:
        return list(dict.fromkeys(figure.metric_type for figure in self.figures))


def _blocks(dev_mean: str, dev_median: str, test_mean: str, test_median: str) -> tuple[Figure, ...]:
    rows = []
    for split, mean, median in (("dev", dev_mean, dev_median), ("test", test_mean, test_median)):
        name = f"Blocks {split}"
        rows += [Figure("mean_distance_error", "mean distance error (block lengths)", "blocks", name, split, mean),
                 Figure("median_distance_error", "median distance error (block lengths)", "blocks", name, split, median)]
    return tuple(rows)


def _r_at_1(dataset_type: str, dataset_name: str, split: str, value: str) -> Figure:
    return Figure("recall_at_1", "R@1/20 (%)", dataset_type, dataset_name, split, value)


def _generation(dataset_type: str, dataset_name: str, split: str, ppl: str, word_ppl: str, f1: str, r1: str
                ) -> tuple[Figure, ...]:
    return (Figure("perplexity", "token perplexity", dataset_type, dataset_name, split, ppl),
            Figure("word_perplexity", "word perplexity", dataset_type, dataset_name, split, word_ppl),
            Figure("f1", "unigram F1 (beam 5)", dataset_type, dataset_name, split, f1),
            Figure("recall_at_1", "R@1/20 by likelihood", dataset_type, dataset_name, split, r1))


_BLOCKS_TAGS = ("blocks", "instruction-following", "grounded-language", "pytorch-lightning")
_LIGHT_TAGS = ("light", "dialogue", "grounded-language", "pytorch-lightning")
_SIM = ("light-sim", "LIGHT-sim")
_SIM_V2 = ("light-sim-v2", "LIGHT-sim v2")
_FIXTURE = ("light-fixture", "real LIGHT, the fixture (86 utterances)")
_POLICY = dict(task_type="reinforcement-learning", task_name="Blocks: instruction to block move",
               pipeline_tag="reinforcement-learning", datasets=("blocks",), tags=_BLOCKS_TAGS)
_RANKER = dict(task_type="text-ranking", task_name="LIGHT dialogue ranking", pipeline_tag="text-ranking",
               tags=_LIGHT_TAGS)

CARD_FACTS: dict[str, CardFacts] = {
    "blocks-bandit": CardFacts(**_POLICY, figures=_blocks("3.861", "3.265", "4.043", "3.571")),
    "blocks-bandit-ensemble": CardFacts(**_POLICY, figures=_blocks("3.742", "3.120", "3.797", "3.168")),
    "blocks-supervised": CardFacts(**_POLICY, figures=_blocks("4.577", "4.018", "4.699", "4.227")),
    "light-bi-ranker": CardFacts(**_RANKER, datasets=("light-sim",), figures=(
        _r_at_1(*_SIM, "test", "73.7"), _r_at_1(*_SIM, "test_unseen", "67.9"))),
    "light-cross-ranker": CardFacts(**_RANKER, datasets=("light-sim-v2",), figures=(
        _r_at_1(*_SIM_V2, "test (first 500)", "28.2"), _r_at_1(*_SIM_V2, "test_unseen (first 500)", "26.6"),
        _r_at_1(*_SIM, "test (first 500)", "37.6"), _r_at_1(*_SIM, "test_unseen (first 500)", "33.0"),
        _r_at_1(*_FIXTURE, "fixture", "43.0"))),
    "light-generative": CardFacts(
        task_type="text-generation", task_name="LIGHT dialogue generation", pipeline_tag="text-generation",
        datasets=("light-sim-v2",), tags=_LIGHT_TAGS, figures=(
            *_generation(*_SIM_V2, "valid (first 200)", "64.53", "115.88", "0.144", "0.045"),
            *_generation(*_SIM_V2, "test (first 300)", "70.02", "126.15", "0.128", "0.050"),
            *_generation(*_SIM_V2, "test_unseen (first 300)", "80.26", "162.43", "0.106", "0.040"),
            *_generation(*_SIM, "test (first 300)", "142.00", "414.83", "0.106", "0.033"),
            *_generation(*_SIM, "test_unseen (first 300)", "151.28", "446.96", "0.102", "0.057"),
            *_generation(*_FIXTURE, "fixture", "152.72", "293.68", "0.122", "0.070"))),
    "light-ir": CardFacts(**_RANKER, datasets=("light-sim",), figures=(
        _r_at_1(*_SIM, "test", "57.2"), _r_at_1(*_SIM, "test_unseen", "55.7"))),
    "light-memnet": CardFacts(**_RANKER, datasets=("light-sim",), figures=(
        _r_at_1(*_SIM, "test", "61.2"), _r_at_1(*_SIM, "test_unseen", "49.1"))),
    "light-starspace": CardFacts(**_RANKER, datasets=("light-sim",), figures=(
        _r_at_1(*_SIM, "test", "63.3"), _r_at_1(*_SIM, "test_unseen", "33.5"))),
}
"""Each release's card facts; its figures are the ones its card's tables report."""


def render_header(name: str, license: str, facts: CardFacts) -> str:
    """The YAML front matter (between ``---`` lines) of release ``name``'s card."""
    from huggingface_hub import EvalResult, ModelCardData

    if license not in LICENSES:
        raise ValueError(f"{name}: no Hub licence identifier for {license!r} (known: {sorted(LICENSES)})")
    results = [EvalResult(task_type=facts.task_type, task_name=facts.task_name, dataset_type=figure.dataset_type,
                          dataset_name=figure.dataset_name, dataset_split=figure.split,
                          metric_type=figure.metric_type, metric_name=figure.metric_name,
                          metric_value=float(figure.value))
               for figure in facts.figures]
    data = ModelCardData(license=LICENSES[license], library_name=LIBRARY_NAME, pipeline_tag=facts.pipeline_tag,
                         datasets=list(facts.datasets), metrics=facts.metric_types(), tags=list(facts.tags),
                         model_name=name, eval_results=results)
    return f"---\n{data.to_yaml()}\n---\n"


def split_card(text: str) -> tuple[str, str]:
    """A card's (header, body): the header is the front matter with its ``---`` lines, or ``""``."""
    match = FRONT_MATTER.match(text)
    return (match.group(0), text[match.end():]) if match else ("", text)


def render_card(text: str, header: str) -> str:
    """``text`` with its header replaced by ``header`` (the body kept as it is)."""
    return header + split_card(text)[1].lstrip("\n")


def table_cells(body: str) -> set[str]:
    """Every number in the table rows of a Markdown body, as written (bold marks dropped)."""
    cells = set()
    for line in body.splitlines():
        if line.lstrip().startswith("|"):
            cells.update(re.findall(r"(?<![\d.])\d+(?:\.\d+)?(?![\d.])", line))
    return cells


def check_card(path: Path, license: str, facts: CardFacts) -> list[str]:
    """What is wrong with the card at ``path``: one line per problem, none when it is as rendered."""
    from huggingface_hub import ModelCard

    name = path.stem
    text = path.read_text(encoding="utf-8")
    header, body = split_card(text)
    problems = [f"{path}: the figure {figure.metric_type}={figure.value} ({figure.dataset_name} {figure.split}) "
                "is in no table row of the card" for figure in facts.figures if figure.value not in table_cells(body)]
    if not header:
        return problems + [f"{path}: no metadata header (python -m zoo.cards --write renders it)"]
    if header != render_header(name, license, facts):
        problems.append(f"{path}: the metadata header differs from what zoo/cards.py renders from the facts "
                        "(python -m zoo.cards --write renders it)")
    try:
        card = ModelCard(text)  # the Hub's own parser: YAML, model-index to eval results
    except Exception as error:  # noqa: BLE001 - yaml and huggingface_hub raise their own types
        return problems + [f"{path}: the Hub cannot read the header ({str(error).splitlines()[0]})"]
    if card.data.library_name != LIBRARY_NAME or len(card.data.eval_results or []) != len(facts.figures):
        problems.append(f"{path}: the parsed header lacks library_name or some of its {len(facts.figures)} figures")
    return problems


def releases(manifest: Path | None = None) -> dict[str, str]:
    """Each released name and its licence, from the manifest."""
    from zoo.hub import load_manifest, manifest_path

    return {entry.name: entry.license for entry in load_manifest(manifest or manifest_path()).values()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m zoo.cards",
                                     description="Render or check the model cards' Hugging Face metadata header.")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--check", action="store_true", help="exit 1 if any card's header differs from the rendered one")
    action.add_argument("--write", action="store_true", help="render every card's header into the card")
    parser.add_argument("--cards", type=Path, default=Path(__file__).resolve().parent.parent / "checkpoints" / "cards",
                        help="the cards' folder (default: checkpoints/cards of this checkout)")
    parser.add_argument("--manifest", type=Path, help="the manifest (default: the package's, or $ZOO_MANIFEST)")
    args = parser.parse_args(argv)
    licences = releases(args.manifest)
    problems = [f"{name}: a release without card facts in zoo/cards.py" for name in licences if name not in CARD_FACTS]
    problems += [f"{name}: card facts for a name the manifest does not release" for name in CARD_FACTS
                 if name not in licences]
    for name in sorted(set(licences) & set(CARD_FACTS)):
        path = args.cards / f"{name}.md"
        if not path.is_file():
            problems.append(f"{path}: missing")
            continue
        if args.write:
            header = render_header(name, licences[name], CARD_FACTS[name])
            text = path.read_text(encoding="utf-8")
            if split_card(text)[0] != header:
                path.write_text(render_card(text, header), encoding="utf-8")
                print(f"rendered {path}")
        problems += check_card(path, licences[name], CARD_FACTS[name])
    for problem in problems:
        print(problem, file=sys.stderr)
    if not problems and args.check:
        print(f"{len(set(licences) & set(CARD_FACTS))} model cards match their rendered headers")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
