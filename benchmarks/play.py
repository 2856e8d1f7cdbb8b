"""Speed of ``zoo play``: LIGHT starts (index built, index loaded), LIGHT partner turns, Blocks instructions.

    python benchmarks/play.py --corpus runs/light-sim-full [more corpus dirs] --json

1. **Starts**, each a fresh ``zoo play light`` process (imports, models, world, retrieval index)
   that reads a script holding ``/quit``, timed wall to wall: the first in an empty
   ``$ZOO_CACHE`` index directory (the index is encoded, with the models already copied into
   the cache by ``zoo download``, which is not timed), then ``--starts`` later ones that load it.
2. **LIGHT partner turns** (say + act + emote), in one process: ``--turns`` lines said to the
   partner in a room of the real world (the authored one without data), each timed from the
   line to the end of the partner's turn; median, 90th percentile and the partner's own
   per-part seconds (from its transcript records). Every other line names a thing in the room
   or held by the partner ("Could you give me the purses?"), so the partner also ranks and
   takes actions (it acts only on what was mentioned).
3. **Blocks instructions**: ``--instructions`` boards (dev examples 0, 10, 20, ... with data,
   procedural boards without), each given its own instruction; the policy's whole execution
   with rendering, and the same plus writing the GIF.

4. **Index encoding** (``--encode N``, alone): N distinct training utterances (of ``--corpus``,
   else of a LIGHT-sim corpus of the ``small`` preset generated in memory on the world
   ``zoo play light`` uses) encoded by the released light-bi-ranker ``--repeats`` times, the
   way a first start encodes its index (all cores, bfloat16 where the CPU has it) and, side by
   side, by the plain reference (float32 on one thread, the same length-sorted batches);
   medians of wall and CPU seconds, their ratios, and how close the embeddings are.

Targets: later starts under 10 s, a LIGHT turn under 1 s at the median, a Blocks
instruction under 2 s. The last line is one JSON object; it records the machine's load
average, since the figures depend on what else runs.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

LINES = (
    "Good evening. What brings you here?",
    "I have not eaten all day.",
    "Tell me about this place.",
    "Who are you, really?",
    "Do you know where the treasure is hidden?",
    "Why do you look so worried?",
)
ASKING = (
    "Could you give me the {thing}?",
    "What a fine {thing}. May I see it?",
    "Please pick up the {thing} for me.",
    "I would trade anything for that {thing}.",
)


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def start_once(corpus: list[str], cache: Path, threads: int, workdir: Path) -> dict:
    script, transcript = workdir / "quit.txt", workdir / "start.jsonl"
    script.write_text("/quit\n")
    env = {**os.environ, "ZOO_CACHE": str(cache), "OMP_NUM_THREADS": str(threads)}
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "zoo.cli", "play", "light", "--corpus", *corpus, "--script", str(script),
                    "--transcript", str(transcript)], cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    seconds = time.perf_counter() - started
    record = json.loads(transcript.read_text().splitlines()[0])
    return {"seconds": round(seconds, 2), "index": record["index"], "load_seconds": record["load_seconds"]}


def starts(corpus: list[str], count: int, threads: int, cache: Path, workdir: Path) -> dict:
    env = {**os.environ, "ZOO_CACHE": str(cache)}
    subprocess.run([sys.executable, "-m", "zoo.cli", "download", "light-bi-ranker", "light-memnet"], cwd=REPO,
                   env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    first = start_once(corpus, cache, threads, workdir)
    later = [start_once(corpus, cache, threads, workdir) for _ in range(count)]
    assert first["index"]["built"] and not any(s["index"]["built"] for s in later)
    return {
        "index_utterances": first["index"]["utterances"],
        "first_start_seconds": first["seconds"], "first_index_build_seconds": first["index"]["seconds"],
        "later_start_seconds": [s["seconds"] for s in later],
        "later_start_median": statistics.median(s["seconds"] for s in later),
        "later_index_load_seconds": [s["index"]["seconds"] for s in later],
    }


def light_turns(corpus: list[str], turns: int) -> dict:
    """Partner turns timed in one process (the index is loaded from ``$ZOO_CACHE``)."""
    from zoo.light.environment import load_world
    from zoo.play.light_game import LightGame
    from zoo.play.light_partner import load_partner
    from zoo.play.light_room import stage_room
    from zoo.play.transcript import Transcript

    partner, details = load_partner(corpus=corpus, progress=False)
    world = load_world()
    room = stage_room(world, seed=1)
    transcript = Transcript(None)
    game = LightGame(room, partner, io.StringIO(), transcript)
    game.start(details)
    seconds = []
    for number in range(turns):
        if room.engine.agent(room.partner).dead:
            break
        things = sorted(n.name for n in room.graph.nodes.values() if n.is_object)
        if number % 2 and things:
            line = ASKING[number // 2 % len(ASKING)].format(thing=things[number // 2 % len(things)])
        else:
            line = LINES[number // 2 % len(LINES)]
        started = time.perf_counter()
        game.handle(line)
        seconds.append(time.perf_counter() - started)
    parts = {kind: statistics.median(r["seconds"] for r in transcript.records
                                     if r["speaker"] == room.partner and r["kind"] == kind)
             for kind in ("say", "act", "emote")}
    acting = [r["seconds"] for r in transcript.records if r["speaker"] == room.partner and r["kind"] == "act" and r["text"]]
    parts["act_when_acting"] = statistics.median(acting) if acting else 0.0
    return {"world": world.source, "room": room.scene.room.name, "turns": len(seconds),
            "turn_median_seconds": round(statistics.median(seconds), 4),
            "turn_p90_seconds": round(quantile(seconds, 0.9), 4), "turn_max_seconds": round(max(seconds), 4),
            "part_median_seconds": {k: round(v, 4) for k, v in parts.items()}, "turns_with_an_action": len(acting)}


def blocks_instructions(count: int, model: str) -> dict:
    from zoo.play.blocks_board import BlocksBoard, choose_board
    from zoo.loading import load_policies

    policy = load_policies((model,))
    try:
        boards = [choose_board(f"dev:{10 * i}") for i in range(count)]
    except FileNotFoundError:
        boards = [choose_board(f"procedural:{i}") for i in range(count)]
    runs, with_gif, moves = [], [], []
    with tempfile.TemporaryDirectory(prefix="zoo-play-bench-") as scratch:
        for number, (example, label, from_data) in enumerate(boards):
            board = BlocksBoard(example, label, from_data)
            started = time.perf_counter()
            run = board.run(policy, example.instruction)
            runs.append(time.perf_counter() - started)
            board.write_animation(run, Path(scratch) / f"{number}.gif")
            with_gif.append(time.perf_counter() - started)
            moves.append(len(run.moves))
    return {"model": model, "boards": [label for _, label, _ in boards], "moves": moves,
            "instruction_median_seconds": round(statistics.median(runs), 4),
            "instruction_max_seconds": round(max(runs), 4),
            "instruction_with_gif_median_seconds": round(statistics.median(with_gif), 4)}


def encode_utterances(corpus: list[str] | None, count: int) -> tuple[list[str], str]:
    """``count`` distinct training utterances drawn with seed 0, and where they come from."""
    import random

    if corpus:
        from zoo.play.retrieval_index import UtteranceCorpus

        source = UtteranceCorpus.open(*corpus)
        texts, label = source.training_utterances(), source.label
    else:
        from zoo.light.candidates import speech_pool
        from zoo.light.environment import load_world
        from zoo.light.sim import SimConfig, generate_corpus

        world = load_world()
        texts = list(dict.fromkeys(t for t in speech_pool(generate_corpus(SimConfig.preset("small"), world)["train"])
                                   if t.strip()))
        label = f"LIGHT-sim small ({world.source} world)"
    return random.Random(0).sample(texts, min(count, len(texts))), label


def reference_encode(model, texts: list[str]) -> "torch.Tensor":
    """The plain path: float32 on one thread, the same length-sorted batches."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return model.encode_sorted(model.candidate_encoder.ids(texts))
    finally:
        torch.set_num_threads(threads)


def encoding(corpus: list[str] | None, count: int, repeats: int) -> dict:
    import torch

    from zoo.models.bulk_encoding import cpu_has_bf16, idle_cores, machine_cores
    from zoo.play.light_partner import load_light_model

    texts, label = encode_utterances(corpus, count)
    model = load_light_model("light-bi-ranker").eval()
    model.index_candidates(texts[:64], progress=False)  # warm both paths once
    reference_encode(model, texts[:64])
    times: dict[str, dict[str, list[float]]] = {"reference": {"wall": [], "cpu": []}, "new": {"wall": [], "cpu": []}}
    matrices = {}
    for _ in range(repeats):  # alternated, so both see the same load
        for name, encode in (("reference", lambda: reference_encode(model, texts)),
                             ("new", lambda: model.index_candidates(texts, progress=False).matrix)):
            wall, cpu = time.perf_counter(), time.process_time()
            matrices[name] = encode()
            times[name]["wall"].append(time.perf_counter() - wall)
            times[name]["cpu"].append(time.process_time() - cpu)
    median = {name: {kind: round(statistics.median(values), 3) for kind, values in kinds.items()}
              for name, kinds in times.items()}
    cosine = torch.nn.functional.cosine_similarity(matrices["new"], matrices["reference"])
    return {"utterances": len(texts), "source": label, "repeats": repeats, "cores": machine_cores(),
            "new_threads_at_end": torch.get_num_threads() if os.environ.get("OMP_NUM_THREADS") else idle_cores(),
            "bf16": cpu_has_bf16(), "median_seconds": median,
            "wall_ratio": round(median["reference"]["wall"] / median["new"]["wall"], 2),
            "cpu_ratio": round(median["reference"]["cpu"] / median["new"]["cpu"], 2),
            "utterances_per_second": {name: round(len(texts) / m["wall"], 1) for name, m in median.items()},
            "cosine_min": round(cosine.min().item(), 6), "cosine_mean": round(cosine.mean().item(), 6)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", nargs="+", help="LIGHT corpus directories to retrieve from")
    parser.add_argument("--starts", type=int, default=3, help="later starts to time (index loaded)")
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--instructions", type=int, default=5)
    parser.add_argument("--blocks-model", default="blocks-bandit")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1: the machine is shared)")
    parser.add_argument("--skip-starts", action="store_true",
                        help="time only turns and instructions, with the index already in --cache")
    parser.add_argument("--cache", help="$ZOO_CACHE holding the index for the turns (with --skip-starts)")
    parser.add_argument("--encode", type=int, metavar="N",
                        help="only compare index encoding: N utterances, the first start's way and the reference")
    parser.add_argument("--repeats", type=int, default=3, help="with --encode: rounds of both (medians)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.encode is not None:
        load_before = os.getloadavg()
        result = {"encode": encoding(args.corpus, args.encode, args.repeats),
                  "machine": {"cpus": os.cpu_count(), "load_average_before": [round(x, 2) for x in load_before],
                              "load_average_after": [round(x, 2) for x in os.getloadavg()]}}
        if not args.json:
            print(json.dumps(result, indent=2))
        print(json.dumps(result))
        return
    if not args.corpus:
        parser.error("--corpus is needed (except with --encode)")

    import torch

    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    result = {"machine": {"cpus": os.cpu_count(), "torch_threads": args.threads,
                          "load_average_before": [round(x, 2) for x in load_before]}}
    with tempfile.TemporaryDirectory(prefix="zoo-play-bench-") as scratch:
        cache = Path(args.cache) if args.cache else Path(scratch) / "cache"
        if not args.skip_starts:
            result["starts"] = starts(args.corpus, args.starts, args.threads, cache, Path(scratch))
        os.environ["ZOO_CACHE"] = str(cache)  # the turns load the index the first start built
        result["light"] = light_turns(args.corpus, args.turns)
        result["blocks"] = blocks_instructions(args.instructions, args.blocks_model)
    result["machine"]["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    result["targets_met"] = {
        **({"later_start_under_10s": result["starts"]["later_start_median"] < 10} if "starts" in result else {}),
        "light_turn_median_under_1s": result["light"]["turn_median_seconds"] < 1,
        "blocks_instruction_median_under_2s": result["blocks"]["instruction_median_seconds"] < 2,
    }
    if not args.json:
        print(json.dumps(result, indent=2))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
