"""The official LIGHT release: the three pickles of docs/light_data.md §1, located, verified, loaded, split.

Files come from a local directory (the caller's ``data_dir``, else ``$ZOO_DATA_DIR/light``,
else the download cache ``$ZOO_CACHE/light``) or, when asked, are downloaded from parl.ai.
A release file's sha256 is checked **before** it is unpickled, and unpickling goes through
the restricted unpickler of :mod:`zoo.light.safe_pickle`, so neither a tampered nor a
malicious file can run code. Corpora we generate ourselves (the fixture, LIGHT-sim) have no
published hash and are read with ``verify=False``, which callers must ask for explicitly.

Splits follow ParlAI's builder exactly (docs/light_data.md §3): every unseen-file episode is
``test_unseen``; in ``light_data.pkl`` positions 1368..4732 are shuffled with a fresh
``random.Random(42)``, the first 1000 become ``test``, the next 500 ``valid``, all other
positions ``train``. Each split keeps file order.
"""

from __future__ import annotations

import hashlib
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from zoo.light.records import Episode, LightDataError, parse_episodes
from zoo.light.safe_pickle import load_pickle
from zoo.paths import cache_dir, domain_data_dir

SPLITS = ("train", "valid", "test", "test_unseen")
"""ParlAI's build order; the shared speech-candidate RNG is consumed in this order."""

SPLIT_POOL = range(1368, 4733)
"""Positions of ``light_data.pkl`` eligible for valid/test ("dialogues with object manipulations")."""
SPLIT_SEED = 42
N_TEST = 1000
N_VALID = 500


@dataclass(frozen=True)
class ReleaseFile:
    """One published file: local name, current URL, sha256, and the 2019 URL (no hash then)."""

    filename: str
    url: str
    sha256: str
    first_url: str | None = None


RELEASE_FILES: dict[str, ReleaseFile] = {
    "light_data": ReleaseFile(
        "light_data.pkl",
        "http://parl.ai/downloads/light/light-dialog-processed-small7.pkl",
        "7c83cf49818586db9999ea67a4a6ad087afbd91c26ed629a9f00e21d0b84058f",
        "https://dl.fbaipublicfiles.com/parlai/light/light-dialog-processed-small7.pkl",
    ),
    "light_unseen_data": ReleaseFile(
        "light_unseen_data.pkl",
        "http://parl.ai/downloads/light/light-unseen-processed2.pkl",
        "489b98d08dd94eaf1ba95439d04200ccc54623ade056839f87a5c4207bc5699c",
        "https://dl.fbaipublicfiles.com/parlai/light/light-unseen-processed2.pkl",
    ),
    "light_environment": ReleaseFile(
        "light_environment.pkl",
        "http://parl.ai/downloads/light/light-environment.pkl",
        "162389202f22063e1c32af7f9261aac13d20fc05598388d1e9748735996ec016",
    ),
}


DIALOGUE_SHA256 = (RELEASE_FILES["light_data"].sha256, RELEASE_FILES["light_unseen_data"].sha256)


class ReleaseChecksumError(LightDataError):
    """A file's sha256 is not the published one; it is refused before being unpickled."""


def sha256_of(path: str | os.PathLike) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_sha256(path: str | os.PathLike, expected: str | Sequence[str]) -> str:
    """Check ``path`` against one expected hash (or any of several); return the actual hash."""
    allowed = [expected] if isinstance(expected, str) else list(expected)
    actual = sha256_of(path)
    if actual not in allowed:
        if len(allowed) == 1:
            wanted = f"expected sha256 {allowed[0]}"
        else:
            wanted = "expected the sha256 of a published LIGHT file (" + ", ".join(
                f"{f.filename}: {f.sha256}" for f in RELEASE_FILES.values() if f.sha256 in allowed) + ")"
        raise ReleaseChecksumError(
            f"{path}: {wanted}, got {actual}. The file is not the published release (damaged, "
            "truncated or a different version) and was not unpickled. Delete it and download it "
            "again; for a corpus you generated yourself (the fixture, LIGHT-sim) pass verify=False "
            "(--no-verify)."
        )
    return actual


def locate(name: str, data_dir: str | os.PathLike | None = None, download: bool = False) -> Path:
    """Path of release file ``name`` (a key of :data:`RELEASE_FILES`), downloading it into the
    cache if allowed and needed. A ``data_dir`` given explicitly must hold the file."""
    if name not in RELEASE_FILES:
        raise ValueError(f"unknown LIGHT release file {name!r}; choose one of {sorted(RELEASE_FILES)}")
    release = RELEASE_FILES[name]
    local = domain_data_dir("light", data_dir)
    if local is not None and (local / release.filename).is_file():
        return local / release.filename
    if data_dir is not None:
        raise FileNotFoundError(f"{release.filename} not found in {data_dir}")
    cached = cache_dir() / "light" / release.filename
    if cached.is_file():
        return cached
    if not download:
        raise FileNotFoundError(
            f"LIGHT release file {release.filename} not found. Set ZOO_DATA_DIR to a directory holding "
            f"light/{release.filename}, pass data_dir=, place the file at {cached}, or pass download=True "
            f"(--download) to fetch it from {release.url}."
        )
    from zoo.hub import download_file

    return download_file(release.url, release.sha256, cached)


def load_raw(
    path: str | os.PathLike, *, verify: bool = True, expected_sha256: str | Sequence[str] | None = None
) -> Any:
    """Unpickle a release-format file safely, after checking its sha256.

    With ``verify`` (the default) the file must match ``expected_sha256`` (one hash or
    several) or, when that is None, the hash of one of the published files; ``verify=False``
    skips the check for corpora without a published hash. Unpickling is restricted either way.
    """
    if verify:
        verify_sha256(path, expected_sha256 or [f.sha256 for f in RELEASE_FILES.values()])
    return load_pickle(path)


def load_episodes(
    path: str | os.PathLike, *, verify: bool = True, expected_sha256: str | Sequence[str] | None = None
) -> list[Episode]:
    """Typed episodes of a dialogue pickle (``light_data.pkl``, the unseen file, or a corpus
    in the same schema), in file order. With ``verify`` and no ``expected_sha256`` the file
    must be one of the two published dialogue files."""
    raw = load_raw(path, verify=verify, expected_sha256=expected_sha256 or DIALOGUE_SHA256)
    return parse_episodes(raw, source=str(path))


def split_positions() -> tuple[list[int], list[int]]:
    """(test, valid) positions of ``light_data.pkl`` in shuffle order (docs/light_data.md §3).

    ``random.Random(42).shuffle`` is the exact algorithm ParlAI ran (Python's Mersenne
    Twister with ``_randbelow``, unchanged since Python 3.2), so this reproduces it.
    """
    positions = list(SPLIT_POOL)
    random.Random(SPLIT_SEED).shuffle(positions)
    return positions[:N_TEST], positions[N_TEST:N_TEST + N_VALID]


def split_names(n_episodes: int) -> list[str]:
    """Split name of every position of a ``light_data.pkl`` with ``n_episodes`` entries."""
    if n_episodes < SPLIT_POOL.stop:
        raise LightDataError(
            f"ParlAI's split rule assigns positions {SPLIT_POOL.start}..{SPLIT_POOL.stop - 1} to valid/test, "
            f"so light_data.pkl must hold at least {SPLIT_POOL.stop} episodes; this file has {n_episodes}. "
            "Use split 'all' for a small corpus."
        )
    names = ["train"] * n_episodes
    test, valid = split_positions()
    for position in test:
        names[position] = "test"
    for position in valid:
        names[position] = "valid"
    return names


def split_light_data(episodes: Sequence[Episode]) -> dict[str, list[Episode]]:
    """train/valid/test of ``light_data.pkl``'s episodes, each in file order."""
    splits: dict[str, list[Episode]] = {"train": [], "valid": [], "test": []}
    for episode, name in zip(episodes, split_names(len(episodes))):
        splits[name].append(episode)
    return splits


def select_split(episodes: Sequence[Episode], split: str) -> list[Episode]:
    """Episodes of one split of a single dialogue file.

    ``train``/``valid``/``test`` apply the rule of :func:`split_light_data` (the file is
    ``light_data.pkl`` or a corpus laid out like it); ``test_unseen`` and ``all`` take the
    whole file (the unseen file is entirely test_unseen).
    """
    if split in ("test_unseen", "all"):
        return list(episodes)
    if split not in ("train", "valid", "test"):
        raise ValueError(f"unknown split {split!r}; choose one of {SPLITS + ('all',)}")
    return split_light_data(episodes)[split]


def load_release(
    data_dir: str | os.PathLike | None = None, download: bool = False, verify: bool = True
) -> dict[str, list[Episode]]:
    """The four splits of the official release: train, valid, test, test_unseen.

    ``verify=False`` reads same-named files without their published hashes (e.g. a LIGHT-sim
    corpus written as ``light_data.pkl``/``light_unseen_data.pkl``); unpickling stays restricted.
    """
    data_path = locate("light_data", data_dir, download)
    unseen_path = locate("light_unseen_data", data_dir, download)
    data_hash, unseen_hash = RELEASE_FILES["light_data"].sha256, RELEASE_FILES["light_unseen_data"].sha256
    splits = split_light_data(load_episodes(data_path, verify=verify, expected_sha256=data_hash))
    splits["test_unseen"] = load_episodes(unseen_path, verify=verify, expected_sha256=unseen_hash)
    return splits


def load_environment(data_dir: str | os.PathLike | None = None, download: bool = False) -> Mapping[str, Any]:
    """The raw ``light_environment.pkl`` (rooms, characters, objects; docs/light_data.md §8a layout), verified
    and safely unpickled. The game engine builds its world from it."""
    path = locate("light_environment", data_dir, download)
    raw = load_raw(path, expected_sha256=RELEASE_FILES["light_environment"].sha256)
    if not isinstance(raw, dict):
        raise LightDataError(f"{path}: expected a dict, got {type(raw).__name__}")
    return raw
