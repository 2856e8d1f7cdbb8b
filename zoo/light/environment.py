"""Build a :class:`~zoo.light.world.World` from whichever LIGHT environment is available.

Sources, best first (``load_world(source="auto")``):

1. ``light_environment.pkl``, the official release file (docs/light_data.md §1): sha256-verified and
   unpickled with the restricted unpickler (:func:`zoo.light.release.load_environment`).
2. ``environment-full/light_environment_{train,dev,test}.json`` (docs/light_data.md §8a): the same layout
   keyed by strings; the three files are merged. When ``environment-flat/`` is present too,
   its extra characters and objects fill ids the full files reference but lack (they carry no
   affordance fractions, so they count as gettable objects without classes).
3. ``environment-flat/{rooms,characters,objects}.json`` alone (docs/light_data.md §8b): names, text and
   personas but no links between rooms, characters and objects; a game then draws them at random.
4. The small authored world shipped with the package (``authored_world.json``, same layout
   as 2.), so everything runs on a machine without any data.

Files are found under the caller's ``data_dir`` or ``$ZOO_DATA_DIR/light``.
"""

from __future__ import annotations

import json
import logging
import os
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Mapping

from zoo.safe_json import JsonError, read_json
from zoo.light.records import LightDataError
from zoo.light.world import Affordances, CharacterSpec, Exit, ObjectSpec, RoomSpec, World
from zoo.paths import domain_data_dir

log = logging.getLogger(__name__)

WORLD_SOURCES = ("auto", "official", "environment-full", "environment-flat", "authored")
FULL_FILES = tuple(f"light_environment_{part}.json" for part in ("train", "dev", "test"))
FLAT_FILES = ("rooms.json", "characters.json", "objects.json")
AFFORDANCE_KEYS = ("is_gettable", "is_container", "is_surface", "is_food", "is_drink", "is_wearable", "is_weapon")


def load_world(data_dir: str | os.PathLike | None = None, source: str = "auto") -> World:
    """The richest world available (see the module docstring), or the one ``source`` names."""
    if source not in WORLD_SOURCES:
        raise ValueError(f"unknown world source {source!r}; choose one of {WORLD_SOURCES}")
    root = domain_data_dir("light", data_dir)
    if source in ("auto", "official") and root is not None and (root / "light_environment.pkl").is_file():
        from zoo.light.release import load_environment

        return world_from_environment(load_environment(root), source="official")
    if source == "official":
        raise FileNotFoundError("light_environment.pkl not found (pass data_dir= or set ZOO_DATA_DIR)")
    full = root / "environment-full" if root is not None else None
    flat = root / "environment-flat" if root is not None else None
    has_full = full is not None and any((full / name).is_file() for name in FULL_FILES)
    has_flat = flat is not None and all((flat / name).is_file() for name in FLAT_FILES)
    if source in ("auto", "environment-full") and has_full:
        return world_from_full_json(full, flat if has_flat else None)
    if source == "environment-full":
        raise FileNotFoundError("environment-full/light_environment_*.json not found")
    if source in ("auto", "environment-flat") and has_flat:
        return world_from_flat_json(flat)
    if source == "environment-flat":
        raise FileNotFoundError("environment-flat/{rooms,characters,objects}.json not found")
    if source == "auto":
        _note_authored_stand_in(root)
    return authored_world()


_noted_roots: set[str] = set()
"""Data directories already said to hold no LIGHT environment, in this process."""


def _note_authored_stand_in(root: Path | None) -> None:
    """Say, once per data directory and process, that the authored world stands in for LIGHT:
    one command loads the world several times (the game, the LIGHT-sim corpus it retrieves
    from), and the reader needs to be told once."""
    key = str(root)
    if key in _noted_roots:
        return
    _noted_roots.add(key)
    where = f"in {root}" if root is not None else "(no folder $ZOO_DATA_DIR/light)"
    log.warning("no LIGHT environment found %s; using the small authored world shipped with zoo", where)


def authored_world() -> World:
    """The packaged authored world (our own text; docs/light_data.md §8a layout)."""
    text = resources.files(__package__).joinpath("authored_world.json").read_text(encoding="utf-8")
    return world_from_environment(json.loads(text), source="authored")


def world_from_full_json(directory: str | os.PathLike, flat_directory: str | os.PathLike | None = None) -> World:
    """Merge the course's train/dev/test environment files (a split by category, not the
    paper's) into one world; optionally fill missing ids from the flat files."""
    directory = Path(directory)
    merged: dict[str, dict] = {key: {} for key in ("categories", "rooms", "neighbors", "characters", "objects")}
    for name in FULL_FILES:
        path = directory / name
        if path.is_file():
            raw = _read_json(path)
            for key in merged:
                merged[key].update(raw.get(key) or {})
    if flat_directory is not None:
        characters, objects = _flat_characters_objects(Path(flat_directory))
        for key, records in (("characters", characters), ("objects", objects)):
            for record in records:
                merged[key].setdefault(str(record["id"]), record)
    return world_from_environment(merged, source="environment-full")


def world_from_flat_json(directory: str | os.PathLike) -> World:
    """The flat export: rooms without links, characters and objects without placements."""
    directory = Path(directory)
    rooms = _read_json(directory / "rooms.json")
    characters, objects = _flat_characters_objects(directory)
    raw = {
        "rooms": {str(r["id"]): {"room_id": r["id"], "setting": r["name"], "category": r["category"],
                                 "description": r.get("description", "")} for r in rooms},
        "characters": {str(c["id"]): c for c in characters},
        "objects": {str(o["id"]): o for o in objects},
    }
    return world_from_environment(raw, source="environment-flat")


def _flat_characters_objects(directory: Path) -> tuple[list[dict], list[dict]]:
    """Flat records translated to the full layout's field names (``descripton`` sic)."""
    characters = [
        {"character_id": c["id"], "name": c["name"], "char_type": c.get("char_type", "person"),
         "personas": c.get("persona") or [], "desc": c.get("description", "")}
        for c in _read_json(directory / "characters.json")
    ]
    objects = [
        {"object_id": o["id"], "name": o["name"], "base_form": o.get("base_form") or [],
         "descriptions": o.get("descripton") or o.get("descriptions") or []}
        for o in _read_json(directory / "objects.json")
    ]
    for record in characters:
        record["id"] = record["character_id"]
    for record in objects:
        record["id"] = record["object_id"]
    return characters, objects


def world_from_environment(raw: Mapping[str, Any], source: str = "official") -> World:
    """A world from the environment layout of docs/light_data.md §8a (ids as ints or strings).

    Malformed entries raise :class:`LightDataError` naming the entry, so a damaged file is
    reported rather than half-loaded.
    """
    if not isinstance(raw, Mapping):
        raise LightDataError(f"{source} environment: expected a dict, got {type(raw).__name__}")
    objects = {}
    for key, record in _entries(raw, "objects"):
        where = f"{source} environment: objects[{key!r}]"
        object_id = _int(record.get("object_id", key), where)
        descriptions = tuple(str(d) for d in record.get("descriptions") or [] if d)
        objects[object_id] = ObjectSpec(
            id=object_id,
            name=_text(record, "name", where),
            descriptions=descriptions,
            affordances=Affordances.from_fractions({k: record.get(k) for k in AFFORDANCE_KEYS}),
            base_form=tuple(str(b) for b in record.get("base_form") or []),
            is_plural=bool(record.get("is_plural") or 0),
        )
    names: dict[str, int] = {}
    for spec in objects.values():
        names.setdefault(spec.name.lower(), spec.id)
    characters = {}
    for key, record in _entries(raw, "characters"):
        where = f"{source} environment: characters[{key!r}]"
        character_id = _int(record.get("character_id", key), where)
        characters[character_id] = CharacterSpec(
            id=character_id,
            name=_text(record, "name", where),
            personas=tuple(str(p) for p in record.get("personas") or [] if p),
            description=str(record.get("desc") or ""),
            char_type=str(record.get("char_type") or "person"),
            base_form=tuple(str(b) for b in record.get("base_form") or []),
            is_plural=bool(record.get("is_plural") or 0),
            carrying=_object_refs(record.get("carrying_objects"), names, where),
            wearing=_object_refs(record.get("wearing_objects"), names, where),
            wielding=_object_refs(record.get("wielding_objects"), names, where),
            room_ids=_ids(list(record.get("in_room_ids") or []) + list(record.get("ex_room_ids") or []), where),
        )
    exits_by_room: dict[int, list[Exit]] = {}
    for key, record in _entries(raw, "neighbors"):
        where = f"{source} environment: neighbors[{key!r}]"
        exits_by_room.setdefault(_int(record.get("room_id"), where), []).append(
            Exit(str(record.get("direction") or ""), str(record.get("destination") or ""),
                 str(record.get("connection") or "")))
    rooms = {}
    for key, record in _entries(raw, "rooms"):
        where = f"{source} environment: rooms[{key!r}]"
        room_id = _int(record.get("room_id", key), where)
        rooms[room_id] = RoomSpec(
            id=room_id,
            name=_text(record, "setting", where),
            category=_text(record, "category", where),
            description=str(record.get("description") or ""),
            background=str(record.get("background") or ""),
            in_characters=_ids(record.get("in_characters"), where),
            ex_characters=_ids(record.get("ex_characters"), where),
            in_objects=_ids(record.get("in_objects"), where),
            ex_objects=_ids(record.get("ex_objects"), where),
            exits=tuple(exits_by_room.get(room_id, ())),
        )
    if not rooms:
        raise LightDataError(f"{source} environment has no rooms")
    categories = {_int(k, f"{source} environment: categories"): str(v) for k, v in (raw.get("categories") or {}).items()}
    return World(rooms, characters, objects, source=source, categories=categories)


def _read_json(path: Path) -> Any:
    try:
        return read_json(path)
    except JsonError as error:
        raise LightDataError(str(error)) from None


def _entries(raw: Mapping[str, Any], key: str) -> Iterable[tuple[Any, Mapping[str, Any]]]:
    table = raw.get(key) or {}
    if not isinstance(table, Mapping):
        raise LightDataError(f"environment field {key!r}: expected a dict keyed by id, got {type(table).__name__}")
    for entry_key, record in table.items():
        if not isinstance(record, Mapping):
            raise LightDataError(f"environment {key}[{entry_key!r}]: expected a dict, got {type(record).__name__}")
        yield entry_key, record


def _int(value: Any, where: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise LightDataError(f"{where}: expected an integer id, got {value!r}") from None


def _ids(values: Any, where: str) -> tuple[int, ...]:
    if values is None:
        return ()
    if not isinstance(values, (list, tuple)):
        raise LightDataError(f"{where}: expected a list of ids, got {type(values).__name__}")
    return tuple(_int(v, where) for v in values)


def _object_refs(values: Any, names: Mapping[str, int], where: str) -> tuple[int, ...]:
    """Object ids of a character's belongings. Some records of the real files list object
    *names* (``['knife', 'wood']``) instead of ids: those are matched to an object of that
    exact name, or dropped when there is none."""
    if values is None:
        return ()
    if not isinstance(values, (list, tuple)):
        raise LightDataError(f"{where}: expected a list of object ids, got {type(values).__name__}")
    ids = []
    for value in values:
        if isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit()):
            ids.append(int(value))
        elif isinstance(value, str) and value.strip().lower() in names:
            ids.append(names[value.strip().lower()])
    return tuple(ids)


def _text(record: Mapping[str, Any], key: str, where: str) -> str:
    value = record.get(key)
    if not isinstance(value, str) or not value:
        raise LightDataError(f"{where}: missing or empty {key!r}")
    return value
