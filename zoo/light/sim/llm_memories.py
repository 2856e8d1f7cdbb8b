"""Memories from elsewhere in the world, for the speakers of LIGHT-sim v2 (``speech_memories``).

Why: speech version 2 has people's variety within a dialogue (473 word types at the fixture's 86
utterances against people's 465) but not their long tail: its vocabulary grows like a power of
the corpus size with an exponent near 0.5, which held to the full training size gives at most
21,692 words against real LIGHT's ~32k. Sampling hotter buys coinages, not words
(docs/light_sim_v2.md). People bring in what they know beyond the room; a speaker here can too.

What: each speaker of a chat is given ``count`` memories, each a real place or thing of the
world with the first sentence of its crowdsourced description ("the village well: It is old and
mossy."), drawn from all 661 rooms and 3,462 objects by a hash of (seed, split, chat, speaker),
so a line still depends only on its own chat and seed. The speaker's own room and the objects
around it are what ParlAI shows; memories are not, so copying from them is not context that a
ranker could match, as with people's own knowledge.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Sequence

from zoo.light.sim.speech import address, sentences
from zoo.light.world import World


def memory_pool(world: World) -> tuple[str, ...]:
    """One memory per room and per described object of ``world``, in id order (rooms first)."""
    pool = []
    for room in sorted(world.rooms.values(), key=lambda r: r.id):
        first = sentences(room.description)[:1]
        if first:
            pool.append(f"the {address(room.name)}: {first[0]}")
    for thing in sorted(world.objects.values(), key=lambda o: o.id):
        first = sentences(thing.descriptions[0])[:1] if thing.descriptions else []
        if first:
            pool.append(f"the {address(thing.name)}: {first[0]}")
    return tuple(pool)


def speaker_memories(pool: Sequence[str], count: int, seed: int, split: str, episode: int, speaker: int) -> list[str]:
    """``count`` distinct memories of ``pool`` for one speaker of one chat (fewer if the pool is
    smaller), the same on every turn of that speaker, from a hash: no global RNG."""
    chosen: list[int] = []
    draw = 0
    while len(chosen) < min(count, len(pool)):
        digest = hashlib.sha256(f"{seed}:{split}:{episode}:{speaker}:memory:{draw}".encode()).digest()
        index = int.from_bytes(digest[:8], "big") % len(pool)
        if index not in chosen:
            chosen.append(index)
        draw += 1
    return [pool[i] for i in chosen]


@dataclass(frozen=True)
class Memories:
    """``count`` memories per speaker drawn from ``pool``; the default knows nothing (speech version 2)."""

    pool: tuple[str, ...] = ()
    count: int = 0

    @classmethod
    def from_world(cls, world: World, count: int) -> "Memories":
        return cls(memory_pool(world), count) if count else cls()

    def of(self, seed: int, split: str, episode: int, speaker: int) -> list[str]:
        return speaker_memories(self.pool, self.count, seed, split, episode, speaker) if self.count else []
