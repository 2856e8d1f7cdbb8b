"""Table 1 of the LIGHT paper for any corpus in the release schema (the release or LIGHT-sim).

Per split: distinct locations (setting names), objects (``all_descriptions`` entries, i.e.
every object string that occurred in the room or an inventory), characters (agent names),
dialogues, utterances (turns with speech), emotes, actions, vocabulary size (distinct
lower-cased word tokens of the utterances) and mean utterance length in tokens.

The paper's own figures are in :data:`PAPER_TABLE1` (those of docs/light_data.md §2; the paper's vocabulary
and utterance-length rows are not in the spec and are left out rather than quoted from
memory). How the paper tokenised is not stated, so the last two rows compare only roughly.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Mapping, Sequence

from zoo.light.records import Episode

WORD = re.compile(r"[a-z0-9']+")

ROWS = ("locations", "objects", "characters", "dialogues", "utterances", "emotes", "actions", "vocabulary",
        "utterance_length")
ROW_TITLES = {
    "locations": "Locations", "objects": "Objects", "characters": "Characters", "dialogues": "Dialogues",
    "utterances": "Utterances", "emotes": "Emotes", "actions": "Actions", "vocabulary": "Vocabulary size",
    "utterance_length": "Utterance length",
}
COLUMNS = ("train", "valid", "test", "test_unseen")
COLUMN_TITLES = {"train": "Train", "valid": "Valid", "test": "Test seen", "test_unseen": "Test unseen"}

PAPER_TABLE1: dict[str, dict[str, float]] = {
    "train": {"locations": 589, "objects": 2658, "characters": 1369, "dialogues": 8538, "utterances": 110877,
              "emotes": 17609, "actions": 20256},
    "valid": {"locations": 352, "objects": 1412, "characters": 546, "dialogues": 500, "utterances": 6623,
              "emotes": 1156, "actions": 1518},
    "test": {"locations": 499, "objects": 1895, "characters": 820, "dialogues": 1000, "utterances": 13272,
             "emotes": 2495, "actions": 3227},
    "test_unseen": {"locations": 74, "objects": 844, "characters": 360, "dialogues": 739, "utterances": 9853,
                    "emotes": 1301, "actions": 1880},
}
"""The paper's Table 1 as given in the spec (§2)."""


@dataclass(frozen=True)
class SplitStats:
    locations: int
    objects: int
    characters: int
    dialogues: int
    utterances: int
    emotes: int
    actions: int
    vocabulary: int
    utterance_length: float

    def as_dict(self) -> dict:
        return asdict(self)


def split_stats(episodes: Sequence[Episode]) -> SplitStats:
    """Table 1 column of one split."""
    locations, objects, characters, vocabulary = set(), set(), set(), set()
    utterances = emotes = actions = tokens = 0
    for episode in episodes:
        locations.add(episode.setting.name)
        objects.update(o.name for o in episode.objects)
        characters.update(agent.name for agent in episode.agents)
        for turn in episode.turns:
            if turn.speech is not None:
                words = WORD.findall(turn.speech.lower())
                utterances += 1
                tokens += len(words)
                vocabulary.update(words)
            emotes += turn.emote is not None
            actions += turn.action is not None
    return SplitStats(len(locations), len(objects), len(characters), len(episodes), utterances, emotes, actions,
                      len(vocabulary), round(tokens / utterances, 2) if utterances else 0.0)


GROWTH_POINTS = (1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000)
"""Utterance counts at which :func:`vocabulary_growth` reports the vocabulary."""


def vocabulary_growth(episodes: Sequence[Episode], points: Sequence[int] = GROWTH_POINTS) -> dict[int, int]:
    """Distinct word tokens among the first ``n`` utterances, in corpus order, for each ``n`` in
    ``points`` the split reaches. Why: vocabulary grows sublinearly with corpus size, so two
    corpora's vocabularies compare only at equal size; a small LIGHT-sim corpus's vocabulary
    against real LIGHT's ~32k (110,877 utterances) says little, its curve beside another
    corpus's (the same chats in the same order, for v1 and v2) says more."""
    vocabulary: set[str] = set()
    growth, wanted, seen = {}, set(points), 0
    for episode in episodes:
        for turn in episode.turns:
            if turn.speech is None:
                continue
            vocabulary.update(WORD.findall(turn.speech.lower()))
            seen += 1
            if seen in wanted:
                growth[seen] = len(vocabulary)
    return growth


def corpus_stats(splits: Mapping[str, Sequence[Episode]]) -> dict[str, SplitStats]:
    """Table 1 of every split present, in the paper's column order."""
    order = [s for s in COLUMNS if s in splits] + [s for s in splits if s not in COLUMNS]
    return {split: split_stats(splits[split]) for split in order}


def _cell(value: float | int | None) -> str:
    if value is None:
        return "—"
    return f"{value:,.1f}" if isinstance(value, float) else f"{value:,}"


def format_table(stats: Mapping[str, SplitStats], label: str = "corpus") -> str:
    """A Markdown table: one row per statistic, one column per split."""
    splits = list(stats)
    header = f"| {label} | " + " | ".join(COLUMN_TITLES.get(s, s) for s in splits) + " |"
    lines = [header, "|---|" + "---:|" * len(splits)]
    for row in ROWS:
        cells = [_cell(getattr(stats[s], row)) for s in splits]
        lines.append(f"| {ROW_TITLES[row]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def format_comparison(stats: Mapping[str, SplitStats], label: str = "LIGHT-sim") -> str:
    """A Markdown table with ``label`` and the paper side by side (``sim / paper`` per cell)."""
    splits = [s for s in COLUMNS if s in stats]
    header = "| statistic | " + " | ".join(f"{COLUMN_TITLES[s]}: {label} / paper" for s in splits) + " |"
    lines = [header, "|---|" + "---:|" * len(splits)]
    for row in ROWS:
        cells = [f"{_cell(getattr(stats[s], row))} / {_cell(PAPER_TABLE1[s].get(row))}" for s in splits]
        lines.append(f"| {ROW_TITLES[row]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
