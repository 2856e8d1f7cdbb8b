"""How much of IR's score on a LIGHT-sim corpus comes from lines naming their chat's characters.

    python studies/light_sim_names_probe.py runs/light-sim-v2-small /tmp/v2-small-nonames
    zoo eval light --model ir --source sim --sim-dir /tmp/v2-small-nonames --split test --bootstrap 1000

Writes a copy of the corpus in which every utterance loses the words of its own chat's two
character names (``the fish``, ``water nymph``, a trailing comma with them), nothing else
changed, and prints how many utterances changed. A distractor line comes from another chat,
so a line that names this chat's characters is matched by any context that names them too:
IR on the copy against IR on the original measures that cue. A probe, not a corpus to train
on: people name characters too (21% of the fixture's real lines), and removing a name can
leave a line ungrammatical.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import replace
from pathlib import Path

from zoo.light.environment import load_world
from zoo.light.records import Episode
from zoo.light.sim import SimConfig, load_manifest, load_sim_corpus, write_corpus
from zoo.light.sim.speech import address


def without_names(episode: Episode) -> Episode:
    """``episode`` with its characters' name words (3+ letters; with an article, a plural s and a
    following comma) removed from every utterance."""
    words = sorted({w for agent in episode.agents for w in address(agent.name).lower().split() if len(w) > 2},
                   key=len, reverse=True)
    if not words:
        return episode
    pattern = re.compile(r"\b(?:the |a |an )?(?:" + "|".join(map(re.escape, words)) + r")s?\b,?", re.IGNORECASE)
    return replace(episode, turns=tuple(
        replace(turn, speech=" ".join(pattern.sub("", turn.speech).split())) if turn.speech else turn
        for turn in episode.turns))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus", type=Path, help="a LIGHT-sim corpus directory")
    parser.add_argument("out", type=Path, help="where the copy goes (a new directory)")
    args = parser.parse_args(argv)
    if args.out.exists():
        parser.error(f"{args.out} exists; give a new directory")
    splits, manifest = load_sim_corpus(args.corpus), load_manifest(args.corpus)
    probed = {split: [without_names(e) for e in episodes] for split, episodes in splits.items()}
    changed = sum(a.speech != b.speech for split in splits for x, y in zip(splits[split], probed[split])
                  for a, b in zip(x.turns, y.turns))
    total = sum(turn.speech is not None for episodes in splits.values() for e in episodes for turn in e.turns)
    config = SimConfig(**manifest["config"])
    write_corpus(probed, args.out, config, load_world(None, config.world),
                 {"probe": f"studies/light_sim_names_probe.py on {args.corpus}: character names removed from speech"})
    print(f"{changed} of {total} utterances named a character of their chat; copy without the names in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
