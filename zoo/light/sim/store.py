"""LIGHT-sim corpora on disk: written atomically in the release layout (or one pickle per split)
with a manifest (read back by :mod:`zoo.light.corpus_dir`), and built once into the cache even when
several processes ask.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from zoo.light.corpus_dir import MANIFEST
from zoo.light.environment import load_world
from zoo.light.records import Episode
from zoo.light.release import split_positions
from zoo.light.safe_pickle import dump_pickle
from zoo.light.sim.config import SIM_VERSION, SimConfig
from zoo.light.sim.corpus import build_corpus, default_line_cache, llm_writer
from zoo.light.world import World
from zoo.paths import cache_dir

log = logging.getLogger(__name__)


def release_order(splits: dict[str, list[Episode]]) -> list[Episode]:
    """train/valid/test laid out as one ``light_data.pkl`` from which ParlAI's rule recovers them."""
    test_positions, valid_positions = split_positions()
    total = len(splits["train"]) + len(valid_positions) + len(test_positions)
    slots: list[Episode | None] = [None] * total
    # Sorted positions: the split rule keeps file order, so each split reads back in the order
    # it was generated.
    for position, episode in zip(sorted(test_positions), splits["test"]):
        slots[position] = episode
    for position, episode in zip(sorted(valid_positions), splits["valid"]):
        slots[position] = episode
    train = iter(splits["train"])
    return [slot if slot is not None else next(train) for slot in slots]


def write_corpus(splits: dict[str, list[Episode]], directory: str | os.PathLike, config: SimConfig,
                 world: World, extra: dict | None = None, shard: Any = None) -> Path:
    """Write a corpus (release layout when the sizes allow, else one pickle per split) and its
    manifest, into a temporary sibling first so a crash never leaves half a corpus. With a
    ``shard`` (:class:`~zoo.light.sim.llm_speech.SpeechShard`), ``splits`` hold only its chats:
    one pickle per split, and the label and manifest say which part of ``config``'s corpus it is."""
    from zoo.safe_writes import replace_directory

    directory = Path(directory)
    release = config.release_layout and shard is None
    label = config.label if shard is None else f"{config.label}, chats {shard}"
    with replace_directory(directory, kind="corpus") as staging:
        if release:
            dump_pickle([e.to_raw() for e in release_order(splits)], staging / "light_data.pkl")
            dump_pickle([e.to_raw() for e in splits["test_unseen"]], staging / "light_unseen_data.pkl")
        else:
            for split, episodes in splits.items():
                dump_pickle([e.to_raw() for e in episodes], staging / f"light_sim_{split}.pkl")
        manifest = {
            "label": label,
            "note": f"{config.label} is a generated stand-in for the LIGHT dialogues, not LIGHT itself."
                    + (" Its speech is written by a small language model (zoo.light.sim.llm_speech)."
                       if config.speech == "llm" else "")
                    + (f" Only the chats i with i % {shard.count} == {shard.index} of each split of the corpus that"
                       " config makes." if shard is not None else ""),
            "version": SIM_VERSION,
            "config": asdict(config),
            **({"shard": str(shard)} if shard is not None else {}),
            "world": world.summary(),
            "layout": "release" if release else "splits",
            "dialogues": {split: len(episodes) for split, episodes in splits.items()},
            **(extra or {}),
        }
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return directory


def sim_corpus_dir(config: SimConfig = SimConfig(), data_dir: str | os.PathLike | None = None,
                   world: World | None = None, root: str | os.PathLike | None = None,
                   speech_identity: str = "") -> tuple[Path, World]:
    """Where the corpus of ``config`` lives in the cache (``$ZOO_CACHE/light/sim/<fingerprint>``)."""
    world = world or load_world(data_dir, config.world)
    base = Path(root) if root is not None else cache_dir() / "light" / "sim"
    return base / config.fingerprint(world, speech_identity), world


def ensure_sim_corpus(config: SimConfig = SimConfig(), data_dir: str | os.PathLike | None = None,
                      root: str | os.PathLike | None = None) -> Path:
    """The cached corpus of ``config``, generated (and timed, in its manifest) if absent.

    Generation happens under a file lock beside the corpus, so concurrent processes on one
    machine (the ranks of a DDP run with a cold cache) build it once: the others wait and
    then read the finished corpus."""
    from filelock import FileLock

    writer = llm_writer(config) if config.speech == "llm" else None
    directory, world = sim_corpus_dir(config, data_dir, root=root, speech_identity=writer.identity if writer else "")
    if (directory / MANIFEST).is_file():
        return directory
    directory.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(directory.parent / f".{directory.name}.lock")):
        if (directory / MANIFEST).is_file():  # another process built it while we waited
            return directory
        log.warning("generating %s (%s world, %s dialogues) into %s", config.label, world.source,
                    sum(config.sizes().values()), directory)
        line_cache = default_line_cache(writer.identity, root) if writer else None
        splits, extra = build_corpus(config, world, line_cache, writer)
        return write_corpus(splits, directory, config, world, extra)


@dataclass(frozen=True)
class SimCorpus:
    """The LIGHT-sim corpus of ``config`` (a :class:`SimConfig` or a preset name), generated into
    the cache on first use: what ``LightDataModule(sim=...)`` is given, so the data module reads
    LIGHT-sim without importing the simulator. ``root``: another cache root."""

    config: SimConfig | str = SimConfig()
    root: str | os.PathLike | None = None

    def __post_init__(self) -> None:
        if isinstance(self.config, str):
            object.__setattr__(self, "config", SimConfig.preset(self.config))

    @property
    def label(self) -> str:
        return self.config.label  # type: ignore[union-attr]

    def ensure(self, data_dir: str | os.PathLike | None = None) -> Path:
        """The corpus directory, generated if absent (:func:`ensure_sim_corpus`)."""
        return ensure_sim_corpus(self.config, data_dir, self.root)  # type: ignore[arg-type]
