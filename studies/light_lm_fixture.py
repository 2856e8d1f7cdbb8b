"""A LIGHT generator on the real fixture beside the other LIGHT models, in one pass.

What ``zoo eval light --source fixture --model M --versus OTHER`` reports for one other model,
for several: the generator's R@1/20 by each of its rankings (mean log-probability per token,
PMI), its word and token perplexity and unigram F1, and for each other model the paired
difference of R@1/20 (and, for another generator, the word-perplexity ratio on the same golds).
The generator's outcomes are computed once, however many models it is compared with: on one
CPU thread ranking the 86 cases by a 135M language model takes minutes.

    python studies/light_lm_fixture.py runs/light/smollm2-zero-shot --threads 1 \\
        --versus ir light-bi-ranker light-generative --json docs/results/light_smollm2_zero_shot.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="a save_pretrained directory or released name of a LIGHT generator")
    parser.add_argument("--versus", nargs="*", default=["ir", "light-bi-ranker", "light-generative"],
                        help="models compared case by case (ir is fitted on LIGHT-sim train, as zoo eval light fits it)")
    parser.add_argument("--generations", type=int, default=20, help="cases decoded for unigram F1 (beam search)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    from zoo.bootstrap_intervals import Bootstrap
    from zoo.light.datamodule import LightDataModule
    from zoo.light.evaluate import (
        evaluate_generation,
        evaluate_ranker,
        example_outcomes,
        fit_ir,
        gold_likelihoods,
        paired_difference,
        paired_word_perplexity,
        ranking_outcomes,
    )
    from zoo.light.fixture import LABEL, load_fixture
    from zoo.light.fixture_yardstick import DEFAULT_SEED, yardstick_dataset
    from zoo.light.sim import SimConfig, SimCorpus
    from zoo.loading import LIGHT_BASELINES, load_ranker

    dataset = yardstick_dataset(load_fixture(None), "dialogue", "parlai_default", DEFAULT_SEED,
                                distractors="other-episodes")
    bootstrap = Bootstrap(1000, 0)
    model = load_ranker(args.model)
    started = time.perf_counter()
    by_ranking = ranking_outcomes(model, dataset, progress=True)
    ranked_s = time.perf_counter() - started
    started = time.perf_counter()
    likelihoods = gold_likelihoods(model, dataset, progress=True)
    gold_s = time.perf_counter() - started
    started = time.perf_counter()
    result = {"model": args.model, "data": LABEL, "task": "dialogue", "features": "parlai_default",
              "candidate_seed": DEFAULT_SEED, "n": len(dataset), "config": model.config(),
              "rankings": {name: evaluate_ranker(model, dataset, "dialogue", bootstrap=bootstrap, outcomes=outcomes)
                           for name, outcomes in by_ranking.items()},
              **evaluate_generation(model, dataset, args.generations, bootstrap=bootstrap, likelihoods=likelihoods),
              "versus": {}}
    result["seconds"] = {"rank_all_cases": round(ranked_s, 1), "ms_per_ranked_set": round(1000 * ranked_s / len(dataset)),
                         "score_golds": round(gold_s, 1), "generate": round(time.perf_counter() - started, 1),
                         "threads": args.threads}
    for name in args.versus:
        other = load_ranker(name)
        fitted = {}
        if name in LIGHT_BASELINES and type(other).__name__ == "IRRanker":
            module = LightDataModule(task="dialogue", features="parlai_default", source="sim",
                                     sim=SimCorpus(SimConfig.preset("full")))
            fit_ir(other, module)
            fitted = {"fit_data": module.label}
        theirs = example_outcomes(other, dataset, progress=True)
        entry = {**fitted, **{ranking: paired_difference(outcomes, theirs, "r_at_1", bootstrap)
                              for ranking, outcomes in by_ranking.items()}}
        if getattr(other, "supports_generation", False):
            entry.update(paired_word_perplexity(likelihoods, gold_likelihoods(other, dataset, progress=True), bootstrap))
        result["versus"][name] = entry
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
