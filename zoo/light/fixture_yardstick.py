"""The real LIGHT yardstick: ranking cases made from the fixture's real episodes.

Why: every LIGHT checkpoint here is trained on LIGHT-sim, whose generated speech is far easier
than people's (IR scores 57.2 R@1/20 on it, 23.7 on real LIGHT in the paper). The fixture's
nine real dialogues (:mod:`zoo.light.fixture`) are the only real LIGHT text we have; this
module turns them into cases shaped like the paper's test-time sets (docs/light_data.md §5), so a model's
number on real speech can sit beside its LIGHT-sim number.

* **Examples and contexts** are exactly what the models see on any corpus:
  :func:`zoo.light.examples.build_examples` (ParlAI's two views, the chosen feature set) and
  :func:`~zoo.light.examples.full_contexts`, computed over every example of a view before any
  is dropped, so the history is intact. Only examples whose label the fixture's meta lists as
  real are kept.
* **Dialogue (R@1/20):** every real utterance is a label once. Its 19 distractors are distinct
  real utterances of the *other* fixture episodes, different from the gold, drawn with
  ``random.Random(seed).sample`` (``seed`` 42 by default, ParlAI's speech seed; one RNG consumed
  in example order), and the gold goes to a slot drawn by ``randrange(20)``. Why not ParlAI's
  pool rule (every utterance of the split, the example's own dialogue included): in ParlAI's
  13k-utterance test split a distractor from the dialogue being ranked is rare (about 1 draw in
  1,000); in 86 utterances it is about 1 in 9, and those drawn from earlier turns repeat a line
  the context already shows, which a word-overlap scorer then ranks first. The price is that
  every distractor is off topic, which makes the cases easier than the paper's; the other
  pools of :data:`DISTRACTOR_POOLS` measure how much that matters
  (``docs/results/light_fixture.md``). Distinct strings keep a list from repeating a negative.
* **Action accuracy:** real gold actions; the candidates are the turn's ``available_actions``,
  which the fixture *reconstructed* from a reconstructed inventory (gold always included), so
  this measures ranking against a plausible, not the original, candidate list.
* **Emote accuracy:** real gold emotes among the 22 emotes (docs/light_data.md §6).

The Midi-Tuning dialogues have real speech but no actions or emotes, so only dialogue uses them.
"""

from __future__ import annotations

import random
from dataclasses import replace

from zoo.light.datamodule import LightDataset
from zoo.light.examples import build_examples, full_contexts, label_type
from zoo.light.features import Features
from zoo.light.fixture import LightFixture

DEFAULT_SEED = 42
"""Seed of the distractor draws (ParlAI's speech-candidate seed)."""

NUM_CANDIDATES = 20
"""Gold plus 19 distractors: the paper's R@1/20."""

TASKS = ("dialogue", "action", "emote")


DISTRACTOR_POOLS = {
    "other-episodes": "distinct real utterances of the other fixture episodes",
    "unsaid": "distinct real utterances of the other episodes and of this dialogue's later turns",
    "all": "distinct real utterances of the whole fixture, this dialogue's earlier turns included",
}
"""Where distractors come from; ``other-episodes`` is the yardstick, the others measure how
much the number depends on that choice (``all`` is ParlAI's pool rule applied to 86 lines)."""


class FixtureDistractors:
    """Speech candidate lists: the gold once, plus distinct real utterances drawn from ``pool``.

    ``other-episodes`` (default) draws from every other fixture episode. ``unsaid`` adds this
    dialogue's turns after the labelled one (on topic, but not yet in the context). ``all``
    draws from every real utterance, so a distractor may repeat a line the context already
    shows, which a word-overlap scorer then prefers; in ParlAI's 13k-line pool that is about 1
    list in 100, here about 3 in 5. Utterances are taken in file order and deduplicated;
    ``__call__`` samples ``num_candidates - 1`` of those that differ from the gold and inserts
    the gold at a random slot. A pool too small for a full list is an error, not a shorter list:
    R@1/20 must mean 20 candidates.
    """

    def __init__(self, fixture: LightFixture, seed: int = DEFAULT_SEED,
                 num_candidates: int = NUM_CANDIDATES, pool: str = "other-episodes") -> None:
        if num_candidates < 2:
            raise ValueError(f"num_candidates must be at least 2 (gold and a distractor), got {num_candidates}")
        if pool not in DISTRACTOR_POOLS:
            raise ValueError(f"unknown distractor pool {pool!r}; choose one of {sorted(DISTRACTOR_POOLS)}")
        self.rng = random.Random(seed)
        self.num_distractors = num_candidates - 1
        self.pool = pool
        self.utterances = [(e, t, fixture.episodes[e].turns[t].speech)
                           for e in range(len(fixture.episodes)) for t in fixture.real_turns[e]["speech"]
                           if fixture.episodes[e].turns[t].speech is not None]

    def _eligible(self, episode: int, turn: int, label_episode: int, label_turn: int) -> bool:
        if self.pool == "other-episodes":
            return episode != label_episode
        if self.pool == "unsaid":
            return episode != label_episode or turn > label_turn
        return True

    def __call__(self, gold: str, episode: int, turn: int) -> list[str]:
        pool = list(dict.fromkeys(u for e, t, u in self.utterances
                                  if u != gold and self._eligible(e, t, episode, turn)))
        if len(pool) < self.num_distractors:
            raise ValueError(f"fixture episode {episode}: only {len(pool)} eligible real utterances, "
                             f"{self.num_distractors} distractors needed")
        candidates = self.rng.sample(pool, self.num_distractors)
        candidates.insert(self.rng.randrange(self.num_distractors + 1), gold)
        return candidates


def yardstick_dataset(fixture: LightFixture, task: str = "dialogue", features: str | Features | None = None,
                      seed: int = DEFAULT_SEED, num_candidates: int = NUM_CANDIDATES,
                      distractors: str = "other-episodes") -> LightDataset:
    """The fixture's real ``task`` examples with their full contexts and yardstick candidates
    (``distractors``: a key of :data:`DISTRACTOR_POOLS`, dialogue only)."""
    if task not in TASKS:
        raise ValueError(f"the fixture yardstick covers {TASKS}, not {task!r}")
    kind = label_type(task)
    examples = build_examples(list(fixture.episodes), task, features, split="fixture")
    contexts = full_contexts(examples)  # over every example of a view, before any is dropped
    kept = [i for i, example in enumerate(examples) if fixture.is_real(example.episode, kind, example.turn)]
    if not kept:
        raise ValueError(f"the fixture has no real {kind} labels")
    examples, contexts = [examples[i] for i in kept], [contexts[i] for i in kept]
    if kind == "speech":
        draw = FixtureDistractors(fixture, seed, num_candidates, distractors)
        examples = [replace(e, candidates=tuple(draw(e.label, e.episode, e.turn))) for e in examples]
    return LightDataset(examples, contexts)


def real_persona_share(fixture: LightFixture, dataset: LightDataset) -> float:
    """Fraction of ``dataset``'s examples whose context shows a real (not reconstructed) self
    persona: the one reconstructed text the default features put in front of a model."""
    flags = [fixture.real_personas[e.episode][e.self_agent] for e in dataset.examples]
    return sum(flags) / len(flags) if flags else 0.0
