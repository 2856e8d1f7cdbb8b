"""Label candidates of the three LIGHT tasks, built as ParlAI's builder built them (docs/light_data.md §5).

* speech: 19 negatives drawn from every utterance of the same split plus the gold at a random
  position (R@1/20). The draws use Python's ``random.Random`` with the builder's exact calls
  (``randint`` per draw, ``randrange`` for the gold slot), so with ParlAI's shared
  ``Random(42)`` consumed in ParlAI's order the same lists come out.
* action: the turn's ``available_actions`` (or the "no affordance" set that ignores object
  properties).
* emote: the 22 emotes (or, as ParlAI did, the emotes occurring in the split, in first
  occurrence order: on the release these are the same 22 verbs).

Every list then gets ParlAI's post-processing: trimmed while it has ``clip`` or more entries,
and the gold appended when missing.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

from zoo.light.records import Episode

EMOTES = (
    "applaud", "blush", "cry", "dance", "frown", "gasp", "grin", "groan", "growl", "laugh", "nod",
    "nudge", "ponder", "pout", "scream", "shrug", "sigh", "smile", "stare", "wave", "wink", "yawn",
)
"""The 22 emotes of the collection UI and the LIGHT engine (docs/light_data.md §6)."""

WHICH_CANDIDATES = ("none", "action", "emote")


@dataclass(frozen=True)
class CandidateOptions:
    """How candidate lists are made.

    ``num_speech``: size of a speech list, gold included (ParlAI ``light_use_cands``, 20).
    ``clip``: ParlAI ``light_use_clip_cands`` (10000). ``affordances``: action candidates are
    the available actions (True) or the no-affordance set. ``emotes``: ``fixed`` (the 22 of
    §6) or ``split`` (ParlAI: the split's emotes in first-occurrence order). ``seed``: the
    speech RNG seed. ``rng``: ``parlai`` shares one RNG across splits in ParlAI's build order
    train, valid, test, test_unseen (exact ParlAI lists when every earlier split is given);
    ``per_split`` gives each split a fresh ``Random(seed)`` so its lists do not depend on the
    other splits.
    """

    num_speech: int = 20
    clip: int = 10000
    affordances: bool = True
    emotes: str = "fixed"
    seed: int = 42
    rng: str = "parlai"

    def __post_init__(self) -> None:
        if self.num_speech < 1:
            raise ValueError(f"num_speech must be at least 1 (the gold), got {self.num_speech}")
        if self.emotes not in ("fixed", "split"):
            raise ValueError(f"emotes must be 'fixed' or 'split', got {self.emotes!r}")
        if self.rng not in ("parlai", "per_split"):
            raise ValueError(f"rng must be 'parlai' or 'per_split', got {self.rng!r}")


def speech_pool(episodes: Iterable[Episode]) -> list[str]:
    """Every utterance of the split in file order, duplicates kept (the negatives' pool)."""
    return [turn.speech for episode in episodes for turn in episode.turns if turn.speech is not None]


class SpeechSampler:
    """Draws speech candidate lists from a split's pool with a caller-owned RNG.

    A draw is a uniform pool index; it is accepted when that index was not taken before and
    its utterance differs from the gold (the same string may still appear twice through two
    indices). The gold is then inserted at ``randrange(n_negatives + 1)``. When the pool holds
    fewer eligible entries than needed (a tiny corpus), all of them are used instead of
    looping forever as the original would.
    """

    def __init__(self, pool: Sequence[str], rng: random.Random, num_candidates: int = 20) -> None:
        self.pool = list(pool)
        self.rng = rng
        self.num_negatives = num_candidates - 1
        self._counts = Counter(self.pool)

    def __call__(self, gold: str) -> list[str]:
        eligible = len(self.pool) - self._counts.get(gold, 0)
        wanted = min(self.num_negatives, eligible)
        negatives: list[str] = []
        taken: set[int] = set()
        while len(negatives) < wanted:
            index = self.rng.randint(0, len(self.pool) - 1)
            text = self.pool[index]
            if text != gold and index not in taken:
                taken.add(index)
                negatives.append(text)
        negatives.insert(self.rng.randrange(len(negatives) + 1), gold)
        return negatives


def split_emotes(episodes: Iterable[Episode]) -> list[str]:
    """Distinct emotes of a split in first-occurrence order (ParlAI's emote candidates)."""
    seen: dict[str, None] = {}
    for episode in episodes:
        for turn in episode.turns:
            if turn.emote is not None:
                seen.setdefault(turn.emote)
    return list(seen)


def no_affordance_actions(episode: Episode, t: int) -> list[str]:
    """Naive action candidates of turn ``t`` that ignore object properties (docs/light_data.md §5), sorted.

    The union of ``available_actions[t]`` and: stealing what the partner held at the previous
    turn, getting every room object, and for every held item dropping, wielding, wearing,
    removing, eating, drinking, giving it to the partner, and putting it in every room object
    and every other held item. Object strings lose their first two characters (the ``a ``
    article) exactly as ParlAI did, so ``an altar`` becomes `` altar``. ParlAI deduplicated
    through a set, so its order depended on string hashing; we sort.
    """
    turn = episode.turns[t]
    partner = episode.partner(t).name
    room = [name[2:] for name in turn.room_objects]
    held = [name[2:] for name in turn.inventory]
    previous = [name[2:] for name in episode.turns[t - 1].inventory] if t > 0 else []
    actions = set(turn.available_actions)
    actions.update(f"steal {item} from {partner}" for item in previous)
    actions.update(f"get {item}" for item in room)
    for item in held:
        actions.update(f"{verb} {item}" for verb in ("drop", "wield", "wear", "remove", "eat", "drink"))
        actions.add(f"give {item} to {partner}")
        actions.update(f"put {item} in {other}" for other in room)
        actions.update(f"put {item} in {other}" for other in held if other != item)
    return sorted(actions)


def action_candidates(episode: Episode, t: int, affordances: bool = True) -> list[str]:
    """Action candidates of turn ``t`` before post-processing."""
    if affordances:
        return list(episode.turns[t].available_actions)
    return no_affordance_actions(episode, t)


def finish(candidates: Sequence[str], gold: str, clip: int = 10000) -> list[str]:
    """ParlAI's post-processing: drop from the end while ``clip`` or more, append a missing gold.

    Always returns a new list (ParlAI appended into the episode's own list in place; that had
    no effect on its outputs, and sharing lists would only invite surprises here).
    """
    result = list(candidates)
    while result and len(result) >= clip:
        result.pop()
    if gold not in result:
        result.append(gold)
    return result
