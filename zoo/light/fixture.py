"""The real LIGHT fixture (docs/light_data.md §9): nine real episodes, and which of their fields are real.

Why a module of its own: the fixture is the only real LIGHT dialogue text on our machines, but
it mixes real fields (speech, actions, emotes of the recovered turns, settings, most personas)
with reconstructed ones (inventories, available actions, some personas, and no actions or
emotes at all in the two Midi-Tuning dialogues). Its meta file is the one place that says
which is which, so anything measured on the fixture asks :class:`LightFixture` whether a turn's
field is real instead of trusting that a non-``None`` value is.

The episodes are read from ``light_data_fixture.pkl`` with the restricted unpickler of
:mod:`zoo.light.safe_pickle` (no code can run; the fixture has no published hash, so the
sha256 check of the release does not apply). The meta is plain JSON.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from zoo.safe_json import JsonError, read_json
from zoo.light.records import Episode, LightDataError
from zoo.light.release import load_episodes
from zoo.paths import domain_data_dir

LABEL = "LIGHT (fixture)"
"""What numbers measured on the fixture are reported under: real LIGHT text, nine dialogues."""

PICKLE = "light_data_fixture.pkl"
META = "light_data_fixture_meta.json"
TURN_FIELDS = ("speech", "action", "emote")
_TURN_RANGE = re.compile(r"^(speech|action|emote)\[(\d+)\.\.(\d+)\]$")
_PERSONA = re.compile(r"^agents\[([01])\]\.persona$")


@dataclass(frozen=True)
class LightFixture:
    """The fixture's episodes (file order) and, per episode, the real turns of each field.

    ``real_turns[e][field]`` is the range of turns of episode ``e`` whose ``field`` (speech,
    action or emote) the meta lists as real; a field it does not list is empty.
    ``real_personas[e]`` says whether each agent's persona is real (else reconstructed from the
    environment).
    """

    episodes: tuple[Episode, ...]
    real_turns: tuple[Mapping[str, range], ...]
    real_personas: tuple[tuple[bool, bool], ...]
    directory: Path

    def is_real(self, episode: int, field: str, turn: int) -> bool:
        """Whether turn ``turn`` of episode ``episode`` has a real ``field`` (speech/action/emote)."""
        if field not in TURN_FIELDS:
            raise ValueError(f"field must be one of {TURN_FIELDS}, got {field!r}")
        return turn in self.real_turns[episode][field]


def fixture_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """``<light data dir>/fixture``: ``data_dir`` (the LIGHT data directory) or ``$ZOO_DATA_DIR/light``."""
    light = domain_data_dir("light", data_dir)
    if light is None:
        raise FileNotFoundError("the LIGHT fixture needs a LIGHT data directory: set ZOO_DATA_DIR (holding "
                                f"light/fixture/{PICKLE}) or pass --data-dir")
    return light / "fixture"


def load_fixture(data_dir: str | os.PathLike | None = None) -> LightFixture:
    """The fixture's episodes and real fields, checked against each other."""
    directory = fixture_dir(data_dir)
    pickle_path, meta_path = directory / PICKLE, directory / META
    for path in (pickle_path, meta_path):
        if not path.is_file():
            raise FileNotFoundError(f"LIGHT fixture file {path} not found")
    episodes = load_episodes(pickle_path, verify=False)
    try:
        meta = read_json(meta_path)
    except JsonError as error:
        raise LightDataError(str(error)) from None
    if not isinstance(meta, list) or len(meta) != len(episodes):
        raise LightDataError(f"{meta_path}: expected a list of {len(episodes)} entries, one per fixture episode")
    turns, personas = [], []
    for index, (episode, entry) in enumerate(zip(episodes, meta)):
        fields = _real_fields(entry, f"{meta_path}: entry {index}")
        turns.append(parse_real_turns(fields, len(episode.turns), f"{meta_path}: entry {index}"))
        personas.append(parse_real_personas(fields))
    return LightFixture(tuple(episodes), tuple(turns), tuple(personas), directory)


def _real_fields(entry: Any, where: str) -> list[str]:
    fields = entry.get("real_fields") if isinstance(entry, dict) else None
    if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
        raise LightDataError(f"{where}: expected 'real_fields', a list of strings")
    return fields


def parse_real_turns(real_fields: Sequence[str], n_turns: int, where: str = "meta") -> dict[str, range]:
    """``speech[0..9]``-style entries of ``real_fields`` as turn ranges (both ends included)."""
    ranges = {field: range(0) for field in TURN_FIELDS}
    for entry in real_fields:
        match = _TURN_RANGE.match(entry)
        if match is None:
            continue
        field, first, last = match.group(1), int(match.group(2)), int(match.group(3))
        if not 0 <= first <= last < n_turns:
            raise LightDataError(f"{where}: {entry!r} is outside the episode's {n_turns} turns")
        ranges[field] = range(first, last + 1)
    return ranges


def parse_real_personas(real_fields: Sequence[str]) -> tuple[bool, bool]:
    """Whether ``agents[0].persona`` and ``agents[1].persona`` are listed as real."""
    real = {int(m.group(1)) for m in map(_PERSONA.match, real_fields) if m is not None}
    return 0 in real, 1 in real
