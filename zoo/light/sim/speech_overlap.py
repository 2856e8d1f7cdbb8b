"""How much of a corpus's speech is copied: from the context, from the dialogue, names.

Why these three: they are what makes LIGHT-sim easy for word overlap (TF-IDF IR) in a way
people's speech is not. v1's templates quote the persona and the setting; a small language
model repeats the lines it was shown; and a character's name in a line lets overlap pick out
whose line it is. Measured the same way on the real fixture dialogues, they give a target
(docs/light_sim_v2.md).

- ``context_copy``: share of an utterance's words of 4+ letters found in what ParlAI shows its
  speaker: the setting name and description, the objects (names and descriptions), the
  speaker's own persona.
- ``dialogue_echo``: share of an utterance's content words (4+ letters, not function words)
  found in the :data:`ECHO_WINDOW` lines before it.
- ``naming``: share of utterances naming either character (its name without article, as a
  whole word).
"""

from __future__ import annotations

import re
from typing import Sequence

from zoo.light.records import Episode
from zoo.light.sim.speech import STOPWORDS, address
from zoo.light.stats import WORD

ECHO_WINDOW = 4
LETTERS = re.compile(r"[a-z']+")


def overlap_stats(episodes: Sequence[Episode]) -> dict[str, float]:
    """``context_copy``, ``dialogue_echo`` and ``naming`` of a split (fractions, 3 decimals)."""
    copied = copy_total = echoed = echo_total = named = utterances = 0
    for episode in episodes:
        shown = " ".join([episode.setting.name, episode.setting.description]
                         + [f"{o.name} {o.description}" for o in episode.objects])
        names = [re.compile(rf"\b{re.escape(address(a.name).lower())}\b") for a in episode.agents]
        said = [(turn.speech or "").lower() for turn in episode.turns]
        for t, speech in enumerate(said):
            if not speech:
                continue
            utterances += 1
            context = set(WORD.findall(f"{shown} {episode.speaker(t).persona}".lower()))
            words = [w for w in WORD.findall(speech) if len(w) >= 4]
            copied += sum(w in context for w in words)
            copy_total += len(words)
            before = set(LETTERS.findall(" ".join(said[max(0, t - ECHO_WINDOW):t])))
            content = [w for w in LETTERS.findall(speech) if len(w) >= 4 and w not in STOPWORDS]
            echoed += sum(w in before for w in content)
            echo_total += len(content)
            named += any(name.search(speech) for name in names)
    return {"context_copy": round(copied / max(copy_total, 1), 3),
            "dialogue_echo": round(echoed / max(echo_total, 1), 3),
            "naming": round(named / max(utterances, 1), 3)}
