"""``zoo eval light``: argument parsing and handler.

Heavy imports (torch, models) happen inside the handler: ``zoo --help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys

from zoo.cli.arguments import add_threads_argument
from zoo.cli.light_corpus import add_corpus_arguments, sim_corpus
from zoo.cli.messages import command_failed
from zoo.light.features import FEATURE_SETS
from zoo.light.records import LightDataError
from zoo.light.release import SPLITS
from zoo.loading import LIGHT_BASELINES, load_ranker


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
    add_corpus_arguments(evaluate, fixture=True)
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

    from zoo.bootstrap_intervals import Bootstrap
    from zoo.safe_writes import check_replaceable
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
        return command_failed("eval light", error)
    metric = metric_name(args.task)
    label, split = (cases["data"], "fixture") if fixture else (module.label, args.split)
    summary = {"model": args.model, "task": args.task, "split": split, "features": args.features,
               "data": label, **result, **{k: v for k, v in cases.items() if k != "data"}, **extra}
    subset = ""
    if not fixture:
        from zoo.example_sample import describe_subset, subset_words

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
    from zoo.bootstrap_intervals import Bootstrap

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
                           sim=sim_corpus(args), sim_dir=args.sim_dir, download=args.download, limit=args.limit,
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
