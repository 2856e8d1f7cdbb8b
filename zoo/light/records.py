"""Typed records for one LIGHT episode, in both directions: raw dict <-> dataclasses.

The official release (``light_data.pkl``, ``light_unseen_data.pkl``) stores each two-player
chat as a dict of parallel per-turn lists (docs/light_data.md §2). Everything downstream (examples,
candidates, models, a simulator writing new corpora) should not have to know that layout,
so it is parsed once here into frozen dataclasses, with every structural assumption
checked and a malformed file reported by episode and field. ``Episode.to_raw()`` goes
back to the exact schema, so a simulator can build records and write official-schema
pickles or JSON that the same loader reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

RAW_KEY_ORDER = (
    "setting",
    "agents",
    "character",
    "speech",
    "action",
    "emote",
    "all_descriptions",
    "room_objects",
    "carrying",
    "wearing",
    "wielding",
    "available_actions",
    "room_agents",
)
"""Key order of the release's episode dicts (as in the fixture); ``to_raw`` writes this order."""

TEXT_COLUMNS = ("speech", "action", "emote")
"""Per-turn columns holding ``str`` or ``None``."""

LIST_COLUMNS = ("available_actions", "room_objects", "carrying", "wearing", "wielding")
"""Per-turn columns holding a list of strings (required by ParlAI's builder)."""

OPTIONAL_COLUMNS = ("character", "room_agents")
"""Per-turn columns present in the release format but unused by ParlAI; may be absent."""

REQUIRED_KEYS = ("setting", "agents", "all_descriptions") + TEXT_COLUMNS + LIST_COLUMNS

MAX_EPISODE_TURNS = 200
"""Turns an episode may have. A LIGHT chat usually has 14 (docs/light_data.md §2), the real
fixture's longest has 14 and LIGHT-sim's chats at most ``max_turns`` (14 by default), so the
margin is wide. The bound is what keeps flattening linear in a file's size: every example's
context repeats its view's history (:func:`zoo.light.examples.full_contexts`, as ParlAI showed
it, and the TF-IDF, StarSpace and fastText rankers read all of it), so an episode's contexts
hold up to ``MAX_EPISODE_TURNS / 2`` copies of its text; one episode of 20,000 turns would make
gigabytes of them."""


class LightDataError(ValueError):
    """A LIGHT episode file does not have the structure of the release (docs/light_data.md §2)."""


@dataclass(frozen=True)
class Setting:
    """The room the chat happens in. ``background`` is never shown to models by ParlAI."""

    name: str
    category: str
    description: str
    background: str | None = None

    def to_raw(self) -> dict[str, Any]:
        raw: dict[str, Any] = {"name": self.name, "category": self.category, "description": self.description}
        if self.background is not None:
            raw["background"] = self.background
        return raw


@dataclass(frozen=True)
class Agent:
    """One of the two players: lower-cased character name and first persona block."""

    name: str
    persona: str

    def to_raw(self) -> dict[str, str]:
        return {"name": self.name, "persona": self.persona}


@dataclass(frozen=True)
class ObjectDescription:
    """One ``all_descriptions`` entry: the article-prefixed object string (``a brush``,
    ``an a basket``; characters can appear too) and its description."""

    name: str
    description: str


@dataclass(frozen=True)
class Turn:
    """Turn ``t`` of an episode, taken by ``agents[t % 2]``.

    ``speech``/``action``/``emote`` are ``None`` when absent (at most one of action and emote
    is set in the real data). ``available_actions`` are the engine's valid actions for the
    speaker before the turn; the inventory columns belong to the speaker of this turn.
    ``character`` and ``room_agents`` are ``None`` when the file lacks those keys.
    """

    speech: str | None
    action: str | None = None
    emote: str | None = None
    available_actions: tuple[str, ...] = ()
    room_objects: tuple[str, ...] = ()
    carrying: tuple[str, ...] = ()
    wearing: tuple[str, ...] = ()
    wielding: tuple[str, ...] = ()
    character: str | None = None
    room_agents: tuple[str, ...] | None = None

    @property
    def inventory(self) -> tuple[str, ...]:
        """Everything the speaker holds: carried, then worn, then wielded (ParlAI's order)."""
        return self.carrying + self.wearing + self.wielding


@dataclass(frozen=True)
class Episode:
    """One two-player chat. ``objects`` keeps ``all_descriptions`` in its display order.

    ``extra`` holds any top-level keys this schema does not name (e.g. per-turn ``context``
    or ``score`` of related LIGHT dumps), untouched, so ``to_raw`` round-trips them.
    """

    setting: Setting
    agents: tuple[Agent, Agent]
    turns: tuple[Turn, ...]
    objects: tuple[ObjectDescription, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        if len(self.agents) != 2:
            raise LightDataError(f"an episode has exactly 2 agents, got {len(self.agents)}")

    def __len__(self) -> int:
        return len(self.turns)

    def speaker(self, t: int) -> Agent:
        """The agent who takes turn ``t``: ``agents[0]`` opens, turns alternate."""
        return self.agents[t % 2]

    def partner(self, t: int) -> Agent:
        """The agent who does not take turn ``t``."""
        return self.agents[1 - t % 2]

    def column(self, name: str) -> list:
        """The per-turn list ``name`` as the release stores it (e.g. ``speech``)."""
        return [getattr(turn, name) for turn in self.turns]

    @property
    def descriptions(self) -> dict[str, str]:
        """``all_descriptions`` as a dict, in display order."""
        return {o.name: o.description for o in self.objects}

    def to_raw(self) -> dict[str, Any]:
        """The episode in the release's dict schema (lists, not tuples), key order as released.

        ``character``/``room_agents`` are written only when at least one turn has them, so an
        episode parsed from a file without those keys goes back without them.
        """
        raw: dict[str, Any] = {
            "setting": self.setting.to_raw(),
            "agents": [agent.to_raw() for agent in self.agents],
        }
        if any(turn.character is not None for turn in self.turns):
            raw["character"] = self.column("character")
        for name in TEXT_COLUMNS:
            raw[name] = self.column(name)
        raw["all_descriptions"] = self.descriptions
        for name in ("room_objects", "carrying", "wearing", "wielding", "available_actions"):
            raw[name] = [list(value) for value in self.column(name)]
        if any(turn.room_agents is not None for turn in self.turns):
            raw["room_agents"] = [None if v is None else list(v) for v in self.column("room_agents")]
        raw.update(self.extra)
        return raw

    @classmethod
    def from_raw(cls, raw: Any, where: str = "episode") -> "Episode":
        """Parse one release episode dict; ``where`` names it in errors (file and index)."""
        return parse_episode(raw, where)


def parse_episode(raw: Any, where: str = "episode") -> Episode:
    """Typed episode from one raw dict, checking every field ParlAI's builder relies on."""
    if not isinstance(raw, dict):
        raise LightDataError(f"{where}: expected a dict, got {type(raw).__name__}")
    missing = [key for key in REQUIRED_KEYS if key not in raw]
    if missing:
        raise LightDataError(f"{where}: missing key(s) {', '.join(map(repr, missing))}")
    setting = _parse_setting(raw["setting"], f"{where}: field 'setting'")
    agents = _parse_agents(raw["agents"], f"{where}: field 'agents'")
    objects = _parse_descriptions(raw["all_descriptions"], f"{where}: field 'all_descriptions'")

    present = [name for name in TEXT_COLUMNS + LIST_COLUMNS + OPTIONAL_COLUMNS if name in raw]
    columns = {name: _sequence(raw[name], f"{where}: field {name!r}") for name in present}
    lengths = {name: len(value) for name, value in columns.items()}
    n_turns = lengths["speech"]
    if n_turns > MAX_EPISODE_TURNS:
        raise LightDataError(f"{where}: {n_turns} turns, more than the {MAX_EPISODE_TURNS} an episode may have "
                             "(LIGHT chats have about 14); split it into shorter episodes")
    wrong = {name: n for name, n in lengths.items() if n != n_turns}
    if wrong:
        detail = ", ".join(f"{name} has {n}" for name, n in wrong.items())
        raise LightDataError(f"{where}: per-turn lists differ in length: speech has {n_turns}, {detail}")

    turns = []
    for t in range(n_turns):
        values: dict[str, Any] = {}
        for name in TEXT_COLUMNS:
            values[name] = _optional_str(columns[name][t], f"{where}: field {name!r}[{t}]")
        for name in LIST_COLUMNS:
            values[name] = _str_tuple(columns[name][t], f"{where}: field {name!r}[{t}]")
        if "character" in columns:
            values["character"] = _optional_str(columns["character"][t], f"{where}: field 'character'[{t}]")
        if "room_agents" in columns and columns["room_agents"][t] is not None:
            values["room_agents"] = _str_tuple(columns["room_agents"][t], f"{where}: field 'room_agents'[{t}]")
        turns.append(Turn(**values))

    known = set(REQUIRED_KEYS) | set(OPTIONAL_COLUMNS)
    extra = {key: value for key, value in raw.items() if key not in known}
    return Episode(setting, agents, tuple(turns), objects, extra)


def parse_episodes(raw: Any, source: str = "<episodes>") -> list[Episode]:
    """Typed episodes of a whole release file (a list of episode dicts), in file order."""
    if not isinstance(raw, (list, tuple)):
        raise LightDataError(f"{source}: expected a list of episode dicts, got {type(raw).__name__}")
    return [parse_episode(episode, f"{source}: episode {index}") for index, episode in enumerate(raw)]


def _parse_setting(raw: Any, where: str) -> Setting:
    if not isinstance(raw, dict):
        raise LightDataError(f"{where}: expected a dict, got {type(raw).__name__}")
    values = {}
    for key in ("name", "category", "description"):
        if key not in raw:
            raise LightDataError(f"{where}: missing key {key!r}")
        values[key] = _str(raw[key], f"{where}[{key!r}]")
    background = raw.get("background")
    values["background"] = None if background is None else _str(background, f"{where}['background']")
    return Setting(**values)


def _parse_agents(raw: Any, where: str) -> tuple[Agent, Agent]:
    agents = _sequence(raw, where)
    if len(agents) != 2:
        raise LightDataError(f"{where}: expected 2 agents, got {len(agents)}")
    parsed = []
    for index, agent in enumerate(agents):
        if not isinstance(agent, dict):
            raise LightDataError(f"{where}[{index}]: expected a dict, got {type(agent).__name__}")
        for key in ("name", "persona"):
            if key not in agent:
                raise LightDataError(f"{where}[{index}]: missing key {key!r}")
        parsed.append(Agent(_str(agent["name"], f"{where}[{index}]['name']"),
                            _str(agent["persona"], f"{where}[{index}]['persona']")))
    return parsed[0], parsed[1]


def _parse_descriptions(raw: Any, where: str) -> tuple[ObjectDescription, ...]:
    if not isinstance(raw, dict):
        raise LightDataError(f"{where}: expected a dict of object -> description, got {type(raw).__name__}")
    return tuple(
        ObjectDescription(_str(name, f"{where} key {name!r}"), _str(text, f"{where}[{name!r}]"))
        for name, text in raw.items()
    )


def _sequence(value: Any, where: str) -> Sequence:
    # The builder wraps per-turn containers in list(...); related LIGHT dumps use tuples.
    if not isinstance(value, (list, tuple)):
        raise LightDataError(f"{where}: expected a list, got {type(value).__name__}")
    return value


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise LightDataError(f"{where}: expected a string, got {type(value).__name__}")
    return value


def _optional_str(value: Any, where: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise LightDataError(f"{where}: expected a string or None, got {type(value).__name__}")
    return value


def _str_tuple(value: Any, where: str) -> tuple[str, ...]:
    items = _sequence(value, where)
    for index, item in enumerate(items):
        if not isinstance(item, str):
            raise LightDataError(f"{where}[{index}]: expected a string, got {type(item).__name__}")
    return tuple(items)
