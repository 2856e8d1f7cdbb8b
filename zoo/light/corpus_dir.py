"""A corpus directory in the release schema, read back: the release layout (``light_data.pkl`` and
``light_unseen_data.pkl``) or one ``light_sim_<split>.pkl`` per split, with the manifest its writer
left beside the pickles. LIGHT-sim writes such directories (:mod:`zoo.light.sim.store`); reading
one needs only the release loader, so the data module and the games read corpora without the
simulator.
"""

from __future__ import annotations

import os
from pathlib import Path

from zoo.light.records import Episode
from zoo.light.release import SPLITS, load_episodes, load_release
from zoo.safe_json import read_json

MANIFEST = "sim_manifest.json"
LABEL = "LIGHT-sim"
"""What numbers measured on a LIGHT-sim corpus are reported under (its manifest may say more: v2, a shard)."""


def load_sim_corpus(directory: str | os.PathLike) -> dict[str, list[Episode]]:
    """The four splits of a LIGHT-sim corpus directory (either layout)."""
    directory = Path(directory)
    if (directory / "light_data.pkl").is_file():
        return load_release(directory, verify=False)
    files = {split: directory / f"light_sim_{split}.pkl" for split in SPLITS}
    missing = [str(path) for path in files.values() if not path.is_file()]
    if missing:
        raise FileNotFoundError(f"{directory} is not a LIGHT-sim corpus: missing {', '.join(missing)}")
    return {split: load_episodes(path, verify=False) for split, path in files.items()}


def load_manifest(directory: str | os.PathLike) -> dict:
    path = Path(directory) / MANIFEST
    return read_json(path) if path.is_file() else {}
