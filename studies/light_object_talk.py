"""How much a corpus's speech talks about the objects of its chat: what the objects grounding can add.

    python studies/light_object_talk.py fixture v1=~/.cache/zoo/light/sim/ac316c38659075c7 \
        v2=runs/light-sim-v2-t09-full --limit 2000 --json docs/results/light_object_talk.jsonl

Per corpus (the fixture's real utterances, or a LIGHT-sim corpus's first ``--limit`` train
chats), two shares over utterances, each with a 95% percentile-bootstrap interval (1,000
resamples of the utterances, seed 0):

- ``names_object``: the line holds the head word (last word, 3+ letters, a plural s allowed) of
  an object the context's object lines describe (``all_descriptions`` less the two characters);
- ``object_words``: the line holds a content word (4+ letters, not a stopword) of an object's
  description that neither the speaker's persona nor the setting holds: a word only the objects
  grounding can explain.

With ``--grounding-budget N`` (the bi-ranker recipe's ``max_grounding_tokens``, 128), also, per
LIGHT-sim corpus, over its first ``--cases`` test cases: the share of gold lines naming an
object whose ``_object_desc`` line starts inside the first N word pieces of the grounding
header a ``dialogue_objects`` ranker sees (``seen_in_budget``), and the same header position
in ParlAI's full text (``all``), where the objects come after the setting and the persona.

Why: Table 5's objects row is the gain a ranker gets from seeing those object lines. LIGHT-sim
v2's trained bi-rankers gained nothing from them (docs/light_sim_v2.md), and IR gained by losing
them; if v2's lines talk about the objects less than people do, that is why, and a speech change
is judged first by these shares, then by the rankers.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np

from zoo.light.fixture import load_fixture
from zoo.light.records import Episode
from zoo.light.sim import load_sim_corpus
from zoo.light.sim.speech import STOPWORDS, address

WORD = re.compile(r"[a-z']+")


def content(text: str) -> set[str]:
    return {w.strip("'") for w in WORD.findall(text.lower()) if len(w) >= 4 and w not in STOPWORDS}


def head_word(name: str) -> str:
    """``a brass lamp`` -> ``lamp``: the word a line names the object by (3+ letters, else empty)."""
    words = address(name).lower().split()
    return words[-1] if words and len(words[-1]) >= 3 else ""


def naming(heads) -> re.Pattern | None:
    """Any of the head words ``heads`` as a whole word, a plural s allowed (None without any)."""
    heads = sorted({h for h in heads if h})
    return re.compile(r"\b(?:" + "|".join(map(re.escape, heads)) + r")s?\b") if heads else None


def object_talk(episode: Episode, turns: range) -> list[tuple[bool, bool]]:
    """Per utterance of ``turns`` of ``episode``: (names an object, holds an object-only word)."""
    characters = {address(a.name).lower() for a in episode.agents}
    objects = {name: text for name, text in episode.descriptions.items() if address(name).lower() not in characters}
    names_one = naming(head_word(name) for name in objects)
    described = set().union(*(content(text) for text in objects.values())) if objects else set()
    flags = []
    for t in turns:
        speech = episode.turns[t].speech
        if not speech:
            continue
        own = content(episode.speaker(t).persona) | content(episode.setting.name + " " + episode.setting.description)
        flags.append((bool(names_one and names_one.search(speech.lower())), bool(content(speech) & (described - own))))
    return flags


def measure(episodes_turns, resamples: int = 1000, seed: int = 0) -> dict:
    """Both shares with 95% percentile-bootstrap intervals over utterances."""
    flags = np.array([f for episode, turns in episodes_turns for f in object_talk(episode, turns)], dtype=float)
    rng = np.random.default_rng(seed)
    means = flags[rng.integers(0, len(flags), (resamples, len(flags)))].mean(axis=1)
    row = {"utterances": len(flags)}
    for k, name in enumerate(("names_object", "object_words")):
        row[name] = round(float(flags[:, k].mean()), 4)
        row[f"{name}_ci95"] = [round(float(q), 4) for q in np.percentile(means[:, k], [2.5, 97.5])]
    return row


def grounding_budget(directory: Path, budget: int, cases: int) -> dict:
    """Where the objects sit in the header the ranker truncates to ``budget`` word pieces."""
    from transformers import AutoTokenizer

    from zoo.light.datamodule import LightDataModule
    from zoo.models.backbone import default_backbone_path, split_grounding

    tokenizer = AutoTokenizer.from_pretrained(str(default_backbone_path()), trust_remote_code=False)

    def starts(header: str) -> list[tuple[str, int]]:
        """(object line, index of its first word piece) for each object line of ``header``."""
        offsets = tokenizer(header, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
        found, at = [], 0
        for line in header.split("\n"):
            if line.startswith("_object_desc"):
                found.append((line, next((i for i, (a, _) in enumerate(offsets) if a >= at), len(offsets))))
            at += len(line) + 1
        return found

    named = seen = 0
    first_object_all = []
    only = LightDataModule("dialogue", source="sim", sim_dir=directory, features="dialogue_objects").dataset("test")
    full = LightDataModule("dialogue", source="sim", sim_dir=directory, features="parlai_default").dataset("test")
    for index in range(min(cases, len(only))):
        item = only[index]
        gold = item.candidates[item.label].lower()
        lines = starts(split_grounding(item.context)[0])
        hits = [start for line, start in lines
                if (names := naming([head_word(line[len("_object_desc "):].split(" : ")[0])])) and names.search(gold)]
        named += bool(hits)
        seen += bool(hits) and min(hits) < budget
        full_lines = starts(split_grounding(full[index].context)[0])
        if full_lines:
            first_object_all.append(full_lines[0][1])
    return {"cases": min(cases, len(only)), "gold_names_object": named, "seen_in_budget": round(seen / max(named, 1), 4),
            "all_first_object_token_median": float(np.median(first_object_all)) if first_object_all else None,
            "grounding_budget": budget}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpora", nargs="+", help="`fixture` or NAME=SIM_DIR")
    parser.add_argument("--limit", type=int, default=2000, help="train chats read per LIGHT-sim corpus")
    parser.add_argument("--grounding-budget", type=int, metavar="N",
                        help="also: where the objects sit in a ranker's header cut to N word pieces")
    parser.add_argument("--cases", type=int, default=1000, help="test cases read for --grounding-budget")
    parser.add_argument("--json", type=Path, help="also write one JSON line per corpus here")
    args = parser.parse_args(argv)
    rows = []
    for spec in args.corpora:
        if spec == "fixture":
            fixture = load_fixture()
            pairs = [(e, fixture.real_turns[i]["speech"]) for i, e in enumerate(fixture.episodes)]
            row = {"corpus": "fixture (real speech)", **measure(pairs)}
        else:
            name, _, directory = spec.partition("=")
            train = load_sim_corpus(Path(directory).expanduser())["train"][:args.limit]
            row = {"corpus": name, "sim_dir": directory, "chats": len(train),
                   **measure((e, range(len(e.turns))) for e in train)}
            if args.grounding_budget:
                row.update(grounding_budget(Path(directory).expanduser(), args.grounding_budget, args.cases))
        rows.append(row)
        print(json.dumps(row))
    if args.json:
        args.json.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
