"""The four splits of a LIGHT-sim corpus, in memory: which rooms and characters each split draws
from, one seeded chat per episode, and (LIGHT-sim v2) the same chats' speech rewritten by a
language model through a resumable line cache.
"""

from __future__ import annotations

import hashlib
import os
import random
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from zoo.light.environment import load_world
from zoo.light.records import Episode, LightDataError
from zoo.light.release import N_TEST, N_VALID, SPLIT_POOL, split_positions
from zoo.light.sim.chat import Plan, simulate_episode
from zoo.light.sim.config import SimConfig
from zoo.light.world import World
from zoo.paths import cache_dir


def split_rooms(world: World) -> tuple[list[int], list[int]]:
    """(seen, unseen) room ids: the unseen ones are the six categories of the paper's unseen test."""
    return world.room_ids(unseen=False), world.room_ids(unseen=True)


def character_pools(world: World) -> tuple[list[int], list[int]]:
    """Characters (with a persona) for top-ups: those of seen rooms, and those only of unseen
    rooms. A world without links (the flat export) shares every character between the two."""
    seen_rooms, unseen_rooms = split_rooms(world)
    playable = {i for i, c in world.characters.items() if c.persona}
    seen = [i for i in world.characters_of(seen_rooms) if i in playable]
    unseen = [i for i in world.characters_of(unseen_rooms) if i in playable]
    unseen_only = sorted(set(unseen) - set(seen))
    everyone = sorted(playable)
    return (seen or everyone), (unseen_only or unseen or everyone)


def generate_split(world: World, split: str, n: int, config: SimConfig,
                   require_action: Callable[[int], bool] = lambda i: False,
                   plans: list[Plan] | None = None) -> list[Episode]:
    """``n`` episodes of ``split`` (``test_unseen`` draws from the unseen rooms); each episode's
    speech plan is appended to ``plans`` when given."""
    seen_rooms, unseen_rooms = split_rooms(world)
    rooms = unseen_rooms if split == "test_unseen" else seen_rooms
    if not rooms:
        raise LightDataError(f"the {world.source} world has no {'unseen' if split == 'test_unseen' else 'seen'} rooms")
    seen_pool, unseen_pool = character_pools(world)
    pool = unseen_pool if split == "test_unseen" else seen_pool
    episodes = []
    for index in range(n):
        rng = random.Random(f"{config.seed}:{split}:{index}")
        plan: Plan | None = [] if plans is not None else None
        episodes.append(simulate_episode(world, rng.choice(rooms), pool, rng, config, require_action(index), plan))
        if plans is not None:
            plans.append(plan)  # type: ignore[arg-type]
    return episodes


def generate_corpus(config: SimConfig = SimConfig(), world: World | None = None,
                    data_dir: str | os.PathLike | None = None,
                    plans: dict[str, list[Plan]] | None = None) -> dict[str, list[Episode]]:
    """All four splits, with template speech. Valid and test chats (and, in the release layout,
    the train chats at the positions ParlAI reserves for "dialogues with object manipulations")
    contain at least one action, as in LIGHT. ``plans``, when given, receives each split's
    speech plans (what an LLM writer rewrites the speech from)."""
    world = world or load_world(data_dir, config.world)
    train_in_pool: set[int] = set()
    if config.release_layout:
        reserved = set().union(*split_positions())
        train_positions = [p for p in range(config.train + N_VALID + N_TEST) if p not in reserved]
        train_in_pool = {i for i, p in enumerate(train_positions) if p in SPLIT_POOL}
    rules: dict[str, Callable[[int], bool]] = {"train": train_in_pool.__contains__, "valid": lambda i: True,
                                               "test": lambda i: True, "test_unseen": lambda i: False}
    splits = {}
    for split, size in config.sizes().items():
        split_plans = plans.setdefault(split, []) if plans is not None else None
        splits[split] = generate_split(world, split, size, config, rules[split], split_plans)
    return splits


def build_corpus(config: SimConfig, world: World, line_cache: str | os.PathLike | None = None,
                 writer: Any = None, shard: Any = None,
                 read_lines: Sequence[str | os.PathLike] = (),
                 cache_only: bool = False) -> tuple[dict[str, list[Episode]], dict]:
    """The corpus of ``config`` and what its manifest adds: template speech, or (``speech="llm"``)
    the same chats with speech written by ``writer`` (default: a
    :class:`~zoo.light.sim.line_writer.ChatLineWriter` of ``config.speech_model``), through the
    resumable line cache ``line_cache`` (default: beside the cached corpora) and the shard
    files beside it; ``read_lines``: other line-cache files (with their shards) to take lines
    from, never written. With a ``shard`` (:class:`~zoo.light.sim.llm_speech.SpeechShard`) only
    that shard's lines are written, to its own file: the corpus returned is then incomplete,
    for the line cache only. ``cache_only``: assemble from the cache files alone, raising
    :class:`~zoo.light.sim.llm_speech.LinesMissing` at the first line none holds (an assembly
    that would otherwise spend hours writing lines, say in the wrong precision order)."""
    start = time.perf_counter()
    if config.speech == "templates":
        if shard is not None:
            raise ValueError("a speech shard needs LLM speech (--speech llm)")
        splits = generate_corpus(config, world)
        return splits, {"generate_seconds": round(time.perf_counter() - start, 2)}
    from zoo.light.sim.line_cache import LineCache, shard_files, shard_path
    from zoo.light.sim.llm_memories import Memories
    from zoo.light.sim.llm_speech import SPEECH_VERSION, write_corpus_speech

    writer = writer or llm_writer(config)
    plans: dict[str, list[Plan]] = {}
    splits = generate_corpus(config, world, plans=plans)
    main = Path(line_cache or default_line_cache(writer.identity))
    others = [path for other in read_lines for path in (Path(other), *shard_files(other))]
    if shard is None:
        cache = LineCache(main, read_also=others, read_after=shard_files(main))  # a shard's line wins
    else:
        own = shard_path(main, shard.index, shard.count)  # every other shard too: a shard split finer resumes
        cache = LineCache(own, read_also=[*others, main, *(path for path in shard_files(main) if path != own)])
    memories = Memories.from_world(world, config.speech_memories)
    splits, report = write_corpus_speech(splits, plans, writer, cache, config.seed, shard, memories, cache_only)
    speech = {"source": "llm", "version": SPEECH_VERSION, "model": str(getattr(writer, "path", "")),
              "memories": config.speech_memories, "memory_pool": len(memories.pool),
              "dtype": getattr(writer, "dtype", "float32"), "device": getattr(writer, "device", "cpu"),
              "batch_size": writer.batch_size,
              "reuse_prompts": getattr(writer, "reuse_prompts", False),  # lines differ by rounding: not in the key
              "identity": writer.identity, "line_cache": str(cache.path), **report.as_dict()}
    if hasattr(writer, "cost"):
        speech["cost"] = {k: round(v, 2) if isinstance(v, float) else v for k, v in writer.cost.items()}
    return splits, {"generate_seconds": round(time.perf_counter() - start, 2), "speech": speech}


def llm_writer(config: SimConfig, batch_size: int = 16, threads: int | None = None, device: str = "cpu",
               **sampling: float):
    """The speech model of an LLM corpus (loaded lazily, on the first line not in the cache), on
    ``device`` (cpu, cuda);
    ``sampling``: :class:`~zoo.light.sim.line_writer.Sampling` fields to change (temperature, top_p),
    which are part of every line's cache key."""
    from dataclasses import replace

    from zoo.light.sim.line_writer import ChatLineWriter, Sampling

    return ChatLineWriter(config.speech_model or None, replace(Sampling(), **sampling), batch_size=batch_size,
                          threads=threads, dtype=config.speech_dtype, device=device)


def default_line_cache(identity: str, root: str | os.PathLike | None = None) -> Path:
    """``$ZOO_CACHE/light/sim/llm_lines/<model>.jsonl``: one file per speech model and decoding,
    shared by every corpus (keys hold the prompt and seed, so corpora never mix lines)."""
    base = Path(root) if root is not None else cache_dir() / "light" / "sim"
    return base / "llm_lines" / f"{hashlib.sha256(identity.encode()).hexdigest()[:16]}.jsonl"

