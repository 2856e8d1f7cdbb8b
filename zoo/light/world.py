"""The LIGHT world catalogue: rooms, characters and objects, as the environment files give them.

A :class:`World` is read-only reference material (what exists, with which text and
affordances); a playable instance of one room lives in :mod:`zoo.light.graph` and the rules
in :mod:`zoo.light.actions`. Loading from the release pickle, the JSON variants or the
packaged authored world is in :mod:`zoo.light.environment`, so this module knows no file
format.

Affordances follow the 2019 collection code (docs/light_data.md §7a): the environment stores crowd-vote
fractions in [0, 1]; an object is a container when ``is_surface`` or ``is_container`` is above
0.5, food/drink/wearable/weapon above 0.5, and cannot be picked up when ``is_gettable`` is
below 0.33.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

NEIGHBOUR_KINDS = ("objects", "characters", "locations", "actions", "words")
"""What an embedding of LIGHT can be asked for the nearest of (the paper's Table 3 rows)."""

UNSEEN_CATEGORIES = frozenset({
    "city in the clouds", "frozen tundra", "magical realm", "netherworld", "supernatural", "underwater aquapolis",
})
"""The six categories of the paper's unseen test set (rooms with ``room_id >= 703``, docs/light_data.md §3/§8a)."""

UNSEEN_ROOM_ID = 703
"""The 2019 collection code's seen/unseen boundary on room ids."""

CONTAINER_THRESHOLD = 0.5
CLASS_THRESHOLD = 0.5
GETTABLE_THRESHOLD = 0.33


@dataclass(frozen=True)
class Affordances:
    """What an object can be used for, decided from crowd fractions by the thresholds of §7a."""

    gettable: bool = True
    container: bool = False
    surface: bool = False
    food: bool = False
    drink: bool = False
    wearable: bool = False
    weapon: bool = False

    @classmethod
    def from_fractions(cls, fractions: Mapping[str, float | None]) -> "Affordances":
        """From the ``is_*`` fields of an environment object; a missing field counts as unknown:
        gettable defaults to True (most LIGHT objects are), every class to False."""

        def value(key: str, default: float) -> float:
            raw = fractions.get(key)
            return default if raw is None else float(raw)

        surface = value("is_surface", 0.0) > CONTAINER_THRESHOLD
        return cls(
            gettable=value("is_gettable", 1.0) >= GETTABLE_THRESHOLD,
            container=surface or value("is_container", 0.0) > CONTAINER_THRESHOLD,
            surface=surface,
            food=value("is_food", 0.0) > CLASS_THRESHOLD,
            drink=value("is_drink", 0.0) > CLASS_THRESHOLD,
            wearable=value("is_wearable", 0.0) > CLASS_THRESHOLD,
            weapon=value("is_weapon", 0.0) > CLASS_THRESHOLD,
        )

    def classes(self) -> frozenset[str]:
        """The engine's class names (``container``, ``food``, ..., ``not_gettable``)."""
        names = {name for name in ("container", "food", "drink", "wearable", "weapon") if getattr(self, name)}
        if not self.gettable:
            names.add("not_gettable")
        return frozenset(names)


@dataclass(frozen=True)
class ObjectSpec:
    """An object of the catalogue. ``descriptions`` are alternatives; plural objects are named
    in a game by one of their ``base_form`` words (docs/light_data.md §7a)."""

    id: int
    name: str
    descriptions: tuple[str, ...]
    affordances: Affordances = Affordances()
    base_form: tuple[str, ...] = ()
    is_plural: bool = False

    @property
    def description(self) -> str:
        return self.descriptions[0] if self.descriptions else ""


@dataclass(frozen=True)
class CharacterSpec:
    """A character: ``personas`` are first-person blocks (a player gets ``personas[0]``)."""

    id: int
    name: str
    personas: tuple[str, ...]
    description: str = ""
    char_type: str = "person"
    base_form: tuple[str, ...] = ()
    is_plural: bool = False
    carrying: tuple[int, ...] = ()
    wearing: tuple[int, ...] = ()
    wielding: tuple[int, ...] = ()
    room_ids: tuple[int, ...] = ()

    @property
    def persona(self) -> str:
        return self.personas[0] if self.personas else ""


@dataclass(frozen=True)
class Exit:
    """A way out of a room. ``destination`` is free text in LIGHT, not a room id."""

    direction: str
    destination: str
    connection: str = ""


@dataclass(frozen=True)
class RoomSpec:
    """A room. ``in_*`` lists were mentioned in the description, ``ex_*`` are extra suggestions;
    both may repeat ids, as in the release."""

    id: int
    name: str
    category: str
    description: str
    background: str = ""
    in_characters: tuple[int, ...] = ()
    ex_characters: tuple[int, ...] = ()
    in_objects: tuple[int, ...] = ()
    ex_objects: tuple[int, ...] = ()
    exits: tuple[Exit, ...] = ()

    @property
    def unseen(self) -> bool:
        """In the paper's unseen test categories (docs/light_data.md §3)."""
        return self.category in UNSEEN_CATEGORIES


@dataclass
class World:
    """All rooms, characters and objects of one source, keyed by id.

    ``source`` says where it came from (``official``, ``environment-full``, ``environment-flat``,
    ``authored``), so every corpus made from it can be labelled.
    """

    rooms: dict[int, RoomSpec]
    characters: dict[int, CharacterSpec]
    objects: dict[int, ObjectSpec]
    source: str = "unknown"
    categories: dict[int, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._by_name: dict[str, ObjectSpec] | None = None

    def room_ids(self, unseen: bool | None = None) -> list[int]:
        """Sorted room ids, optionally only the seen (False) or unseen (True) ones."""
        return sorted(i for i, room in self.rooms.items() if unseen is None or room.unseen == unseen)

    def characters_of(self, room_ids: Iterable[int]) -> list[int]:
        """Sorted ids of characters linked (in or ex) to any of ``room_ids``."""
        ids: set[int] = set()
        for room_id in room_ids:
            room = self.rooms[room_id]
            ids.update(i for i in room.in_characters + room.ex_characters if i in self.characters)
        return sorted(ids)

    def object_named(self, name: str) -> ObjectSpec | None:
        """The object whose name (or a base form of a plural one) is ``name``, if unique."""
        if self._by_name is None:
            index: dict[str, ObjectSpec | None] = {}
            for spec in self.objects.values():
                keys = {spec.name.lower()} | ({b.lower() for b in spec.base_form} if spec.is_plural else set())
                for key in keys:
                    index[key] = spec if key not in index else None
            self._by_name = index
        return self._by_name.get(name.lower())

    def summary(self) -> dict[str, int | str]:
        return {
            "source": self.source,
            "rooms": len(self.rooms),
            "unseen_rooms": sum(room.unseen for room in self.rooms.values()),
            "characters": len(self.characters),
            "objects": len(self.objects),
        }


def article_name(name: str) -> str:
    """The release's object string: ``an`` before a lower-case vowel, else ``a``, applied
    blindly (``an altar``, ``a A quiver``, ``an a basket``; docs/light_data.md §2 notes)."""
    return ("an " if name[:1] in "aeiou" and name[:1] else "a ") + name
