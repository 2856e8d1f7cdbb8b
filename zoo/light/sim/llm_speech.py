"""LIGHT-sim v2: the simulator's chats, with every line rewritten by a small language model.

Why: LIGHT-sim v1's template speech is far easier than people's (TF-IDF IR 57.2 R@1/20 on
it against 23.7 on real LIGHT, 12 tokens per utterance against 18-19, an 11k training
vocabulary against ~32k), so what the rankers learn on it does not carry to real speech.

How: the simulator plays each chat as before (same rooms, personas, objects, actions, emotes,
same RNG: the v1 corpus of a seed is the skeleton of the v2 corpus of that seed) and records
what each turn's speech does (its plan). Then, turn by turn across all the chats of a split
(so prompts batch), the model writes each line from the speaker's persona, the setting, the
objects, what just happened, the plan and the lines already written
(:func:`zoo.light.sim.llm_prompts.build_prompt`). A completion is cleaned
(:func:`~zoo.light.sim.llm_prompts.clean_line`); a rejected one is sampled again with another
seed, and after :data:`ATTEMPTS` failures the template line stands in, counted in the report.

Seeded: line ``t`` of episode ``i`` of split ``s``, attempt ``a``, is sampled with a seed
derived from ``(seed, s, i, t, a)`` by its own generator, so a corpus does not depend on the
batch composition's RNG use. Cached: every completion is appended to a JSON-lines file
(:class:`zoo.light.sim.line_cache.LineCache`) keyed by the model file's sha256, the decoding
settings, the prompt and the seed; a rerun after an interruption asks the model only for
what is missing, and a finished corpus regenerates without one model call.

Sharded: a line depends only on its own chat (the prompt holds that chat's lines so far), so
the chats of a split can be written by several processes at once, shard ``k`` of ``n`` taking
chats ``i`` with ``i % n == k`` (:class:`SpeechShard`); each appends to its own cache file, and
a last unsharded run reads them all and writes the corpus without calling the model.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Hashable, Protocol, Sequence

from zoo.light.records import Episode
from zoo.light.sim.line_cache import LineCache, line_key
from zoo.light.sim.llm_memories import Memories
from zoo.light.sim.llm_prompts import (
    P_ONE_SENTENCE,
    build_prompt,
    clean_line,
    echo_words,
)

log = logging.getLogger("zoo.progress")

LABEL = "LIGHT-sim v2"
SPEECH_VERSION = "3"
"""Bumped whenever prompts or post-processing change, so cached corpora are rebuilt. 2: the partner
is "them" in instructions and dialogue labels, and a leading vocative is cut (fewer names). 3: a
label opening a line is cut (``I: ...``, ``The old man: ...``; :func:`~zoo.light.sim.llm_prompts.drop_leading_label`)."""
ATTEMPTS = 2
"""Samples per line before the template line is kept instead."""
FLUSH_EVERY = 4
"""Batches written between cache appends and progress lines."""
CHATS_PER_PASS = 256
"""Chats written together, turn by turn (so that prompts batch). The writer keeps each speaker's
last prompt until the pass ends, to run the model only over what the next prompt adds
(:mod:`zoo.light.sim.prompt_prefixes`; SmolLM2 in bfloat16: ~6.4 MB per speaker, ~3.3 GB a pass).
Why 256: a turn's prompts are sorted by the tokens they add before batching, so more chats per
pass means less padding; counted on the first 512 `small` train chats at batch 64, the prefill
runs 2.04x fewer positions than whole prompts at 256 chats a pass, 1.75x at 128, 1.36x at 64."""


class LineWriter(Protocol):
    """What the rewrite needs from a model (:class:`zoo.light.sim.line_writer.ChatLineWriter`)."""

    batch_size: int

    @property
    def identity(self) -> str: ...

    def complete(self, prompts: Sequence[Sequence[dict]], seeds: Sequence[int],
                 avoid: Sequence[Sequence[str]] | None = None,
                 slots: Sequence[Hashable | None] | None = None) -> list[str]: ...

    def forget_prompts(self) -> None: ...


class LinesMissing(ValueError):
    """A cache-only rewrite met a line no cache file holds (``cache_only=True``)."""


@dataclass(frozen=True)
class SpeechShard:
    """Shard ``index`` of ``count``: the chats ``i`` of every split with ``i % count == index``."""

    index: int
    count: int

    def __post_init__(self):
        if not 0 <= self.index < self.count:
            raise ValueError(f"a speech shard is K/N with 0 <= K < N, got {self.index}/{self.count}")

    @classmethod
    def parse(cls, text: str) -> "SpeechShard":
        """``"1/2"`` → shard 1 of 2."""
        index, slash, count = text.partition("/")
        if not slash or not index.strip().isdigit() or not count.strip().isdigit():
            raise ValueError(f"a speech shard is K/N (e.g. 0/2), got {text!r}")
        return cls(int(index), int(count))

    def owns(self, episode: int) -> bool:
        return episode % self.count == self.index

    def select(self, episodes: Sequence[Episode]) -> list[Episode]:
        """This shard's chats of a split, in order: a random ``1/count`` of them (the simulator
        draws every chat alike), whole dialogues, so a corpus of them measures what the full
        corpus will show before the other shards are written."""
        return [episode for i, episode in enumerate(episodes) if self.owns(i)]

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


@dataclass
class SpeechReport:
    """What the rewrite of a corpus did: lines in all, completions the model wrote now, those
    read from the cache (``other_precision`` of them written at another precision than the
    writer's: :attr:`zoo.light.sim.line_writer.ChatLineWriter.other_precisions`), lines that needed a
    second sample, and template fallbacks."""

    lines: int = 0
    generated: int = 0
    cached: int = 0
    other_precision: int = 0
    retried: int = 0
    fallbacks: int = 0
    seconds: float = 0.0
    per_split: dict[str, dict[str, int]] = field(default_factory=dict)

    def as_dict(self) -> dict:
        data = asdict(self)
        data["seconds"] = round(self.seconds, 2)
        return data


def utterance_seed(seed: int, split: str, episode: int, turn: int, attempt: int) -> int:
    """The sampling seed of one line (63 bits, from a hash: no two lines share a stream)."""
    digest = hashlib.sha256(f"{seed}:{split}:{episode}:{turn}:{attempt}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def sentence_budget(seed: int, split: str, episode: int, turn: int) -> int:
    """1 or 2: how many sentences line ``turn`` keeps (one with :data:`P_ONE_SENTENCE`), from its seed."""
    return 1 if utterance_seed(seed, split, episode, turn, -1) % 1000 < P_ONE_SENTENCE * 1000 else 2


class _Progress:
    """Progress lines (``zoo.progress``): lines done, speed, time left; every ``every_s`` seconds.

    The time left comes from the pace since the model wrote its first line of the split, so
    that a resumed run's first stretch (lines found in the cache, done in seconds) does not
    make the rest look minutes long instead of hours."""

    def __init__(self, split: str, total: int, every_s: float = 30.0):
        self.split, self.total, self.every_s = split, total, every_s
        self.start = self.last = self.previous = time.perf_counter()
        self.done = self.generated = 0
        self.paced_from: tuple[float, int] | None = None  # (time, lines done) before the model's first line

    def advance(self, done: int, generated: int, force: bool = False) -> None:
        now = time.perf_counter()
        if generated and self.paced_from is None:
            self.paced_from = (self.previous, self.done)  # from the start of this call's work
        self.previous = now
        self.done += done
        self.generated += generated
        if not force and now - self.last < self.every_s:
            return
        self.last = now
        rate, left = self.generated / max(now - self.start, 1e-9), self.total - self.done
        eta = ""
        if self.paced_from is not None and left > 0 and self.done > self.paced_from[1]:
            since, done_then = self.paced_from
            eta = f", about {_duration(left * (now - since) / (self.done - done_then))} left"
        log.info("%s speech, %s: %d/%d lines (%d written by the model, %.2f lines/s%s)", LABEL, self.split,
                 self.done, self.total, self.generated, rate, eta)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f}s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def write_split_speech(split: str, episodes: Sequence[Episode], plans: Sequence[Sequence], writer: LineWriter,
                       cache: LineCache, seed: int, report: SpeechReport,
                       shard: SpeechShard | None = None, memories: Memories = Memories(),
                       cache_only: bool = False) -> list[Episode]:
    """``episodes`` with every line written by ``writer`` (or taken from ``cache``); with a
    ``shard``, only that shard's chats (the others keep their template lines); ``cache_only``:
    raise :class:`LinesMissing` at the first line the cache lacks instead of asking the model."""
    if len(plans) != len(episodes):
        raise ValueError(f"{split}: {len(episodes)} episodes but {len(plans)} plans")
    counts = {"lines": 0, "generated": 0, "cached": 0, "other_precision": 0, "retried": 0, "fallbacks": 0}
    lines: list[list[str]] = [list(turn.speech or "" for turn in e.turns) if shard and not shard.owns(i) else []
                              for i, e in enumerate(episodes)]
    mine = [i for i in range(len(episodes)) if shard is None or shard.owns(i)]
    progress = _Progress(split if shard is None else f"{split}, shard {shard}", sum(len(episodes[i].turns) for i in mine))
    for start in range(0, len(mine), CHATS_PER_PASS):
        chats = mine[start:start + CHATS_PER_PASS]
        for t in range(max(len(episodes[i].turns) for i in chats)):
            waiting = [i for i in chats if len(episodes[i].turns) > t]
            prompts = {i: (build_prompt(episodes[i], t, plans[i][t], lines[i], memories.of(seed, split, i, t % 2)),
                           echo_words(episodes[i], t, lines[i]))
                       for i in waiting}
            chosen: dict[int, str] = {}
            for attempt in range(ATTEMPTS):
                todo = [i for i in waiting if i not in chosen]
                if not todo:
                    break
                if attempt:
                    counts["retried"] += len(todo)
                raw = _complete(split, t, attempt, todo, prompts, writer, cache, seed, counts, progress, cache_only)
                for i in todo:
                    names = [a.name for a in episodes[i].agents]
                    asked = "\n".join(message["content"] for message in prompts[i][0])
                    line = clean_line(raw[i], lines[i], names, asked, sentence_budget(seed, split, i, t))
                    if line:
                        chosen[i] = line
            for i in waiting:
                if i not in chosen:
                    counts["fallbacks"] += 1
                lines[i].append(chosen.get(i) or episodes[i].turns[t].speech or "")
                counts["lines"] += 1
            progress.advance(len(waiting), 0)
        writer.forget_prompts()
    progress.advance(0, 0, force=True)
    report.per_split[split] = counts
    for name, count in counts.items():  # each a SpeechReport field
        setattr(report, name, getattr(report, name) + count)
    return [replace(e, turns=tuple(replace(turn, speech=line) for turn, line in zip(e.turns, said)))
            for e, said in zip(episodes, lines)]


def _complete(split: str, t: int, attempt: int, todo: list[int], prompts: dict[int, tuple], writer: LineWriter,
              cache: LineCache, seed: int, counts: dict[str, int], progress: _Progress,
              cache_only: bool = False) -> dict[int, str]:
    """Raw completions for ``todo``: from the cache, else from the model in flushed chunks."""
    raw: dict[int, str] = {}
    identities = (writer.identity, *getattr(writer, "other_precisions", ()))  # own precision first
    keys = {}
    for i in todo:
        asked, line_seed = json.dumps(prompts[i], sort_keys=True), utterance_seed(seed, split, i, t, attempt)
        keys[i] = [line_key(identity, asked, line_seed) for identity in identities]  # messages and avoid list
    missing = []
    for i in todo:
        for rank, key in enumerate(keys[i]):
            hit = cache.get(key)
            if hit is not None:
                raw[i] = hit
                counts["cached"] += 1
                counts["other_precision"] += rank > 0
                break
        else:
            missing.append(i)
    if missing and cache_only:
        raise LinesMissing(f"{split} chat {missing[0]}, turn {t}: {len(missing)} line(s) of this turn are in no line-cache "
                           f"file; the precision order matters where both precisions hold a line (--speech-dtype: the "
                           f"one the shard writers ran), and without --cache-only the model writes what is missing")
    chunk = max(1, writer.batch_size * FLUSH_EVERY)
    for start in range(0, len(missing), chunk):
        part = missing[start:start + chunk]
        seeds = [utterance_seed(seed, split, i, t, attempt) for i in part]
        texts = writer.complete([prompts[i][0] for i in part], seeds, [prompts[i][1] for i in part],
                                slots=[(split, i, t % 2) for i in part])  # one speaker of one chat
        cache.put([(keys[i][0], text) for i, text in zip(part, texts)])
        raw.update(zip(part, texts))
        counts["generated"] += len(part)
        progress.advance(0, len(part))
    return raw


def write_corpus_speech(splits: dict[str, list[Episode]], plans: dict[str, list], writer: LineWriter,
                        cache: LineCache, seed: int, shard: SpeechShard | None = None,
                        memories: Memories = Memories(),
                        cache_only: bool = False) -> tuple[dict[str, list[Episode]], SpeechReport]:
    """Every split of a template corpus with LLM speech (a ``shard``'s chats only), and what it took;
    ``cache_only``: every line from the cache, or :class:`LinesMissing`."""
    report, start = SpeechReport(), time.perf_counter()
    rewritten = {split: write_split_speech(split, episodes, plans[split], writer, cache, seed, report, shard, memories,
                                           cache_only)
                 for split, episodes in splits.items()}
    report.seconds = time.perf_counter() - start
    log.info("%s speech: %d lines, %d written by the model, %d from the cache, %d resampled, %d template "
             "fallbacks, in %s", LABEL, report.lines, report.generated, report.cached, report.retried,
             report.fallbacks, _duration(report.seconds))
    return rewritten, report
