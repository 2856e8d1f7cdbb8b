"""Speed of the LIGHT rankers: the paper's Table 10, retrieval, and Lightning's training overhead.

    python benchmarks/light_speed.py --sim-dir runs/light-sim-full --bi runs/light/bi-dialogue/pretrained \\
        --cross runs/light/cross-dialogue/pretrained --json

1. Table 10 setting (emote task, test seen, 22 candidates per example): seconds to score the
   examples with the bi-ranker with its candidate cache, without it (each example's 22
   emotes encoded with it), and with the cross-ranker (22 encoder passes per context), plus
   the ratios. Each is the median of ``--repeats`` runs, measured side by side in one process.
2. Retrieval: queries/s of ``BiRanker.retrieve`` over ``--index-size`` cached utterances (the
   distinct LIGHT-sim utterances of every split; one full corpus has 92,848, so pass a second
   corpus, e.g. ``zoo light sim --seed 1``, with ``--index-sim-dir`` to reach 100k), end to
   end (encoding the contexts and searching) and search alone; plus the one-off seconds to
   build the index.
3. Training examples/s of the bi-ranker: a Lightning Trainer beside a plain PyTorch loop over
   the same model, batches and optimizer (Lightning's overhead).

``--context-tokens 64,128,256`` repeats parts 1 and 2 at several context budgets (the
grounding header keeps half of each): both goals are ratios of context work to candidate or
search work, so the sweep shows where each is met rather than one point.

Without ``--bi``/``--cross`` untrained models with the default encoder are timed (speed does
not depend on the weights). The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import time

import torch

from zoo.light.datamodule import LightDataModule
from zoo.models.bi_ranker import BiRanker
from zoo.models.candidate_cache import RetrievalIndex
from zoo.models.cross_ranker import CrossRanker


def timed(function, repeats: int) -> float:
    """Median wall seconds of ``function()`` over ``repeats`` runs."""
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


@contextlib.contextmanager
def context_budget(models, tokens: int | None):
    """Temporarily give each ranker ``tokens`` of context, half of them for the grounding (a
    cross-ranker's sequence budget also holds the candidate, so it gets those tokens more)."""
    saved = [(m.hparams.max_context_tokens, m.hparams.max_grounding_tokens) for m in models]
    try:
        if tokens:
            for model in models:
                extra = model.hparams.max_candidate_tokens if isinstance(model, CrossRanker) else 0
                model.hparams.max_context_tokens, model.hparams.max_grounding_tokens = tokens + extra, tokens // 2
        yield
    finally:
        for model, (context, grounding) in zip(models, saved):
            model.hparams.max_context_tokens, model.hparams.max_grounding_tokens = context, grounding


def score_all(model, items, batch_size: int) -> None:
    with torch.no_grad():
        for start in range(0, len(items), batch_size):
            model(model.collate(items[start: start + batch_size]))


def table10(bi: BiRanker, cross: CrossRanker, items, repeats: int, batch_size: int) -> dict:
    bi.eval()
    cross.eval()

    def cached():
        bi.cache_candidates = True
        score_all(bi, items, batch_size)

    def uncached():
        bi.cache_candidates = False
        score_all(bi, items, batch_size)

    cached()  # the cache is filled once per set of weights; the timed runs reuse it, as in use
    result = {"examples": len(items), "candidates": len(items[0].candidates),
              "bi_cached_s": timed(cached, repeats), "bi_uncached_s": timed(uncached, repeats),
              "cross_s": timed(lambda: score_all(cross, items, max(1, batch_size // 4)), max(1, repeats // 2))}
    result["uncached_over_cached"] = result["bi_uncached_s"] / result["bi_cached_s"]
    result["cross_over_cached"] = result["cross_s"] / result["bi_cached_s"]
    bi.cache_candidates = True
    return result


def build_index(bi: BiRanker, utterances: list[str]) -> tuple[RetrievalIndex, dict]:
    start = time.perf_counter()
    index = bi.index_candidates(utterances, progress=True)
    return index, {"index_size": len(index.texts), "index_build_s": time.perf_counter() - start}


def retrieval(bi: BiRanker, index: RetrievalIndex, queries: list[str], k: int, repeats: int) -> dict:
    """Queries/s of ``retrieve`` over ``index`` (the one built last), end to end and search alone."""
    end_to_end = timed(lambda: bi.retrieve(queries, k=k), repeats)
    encoded = bi.encode_contexts(queries)
    search = timed(lambda: index.search(encoded, k), repeats)
    return {"queries": len(queries), "k": k, "queries_per_s": len(queries) / end_to_end,
            "search_only_queries_per_s": len(queries) / search}


def training_speed(bi: BiRanker, items, batch_size: int, steps: int) -> dict:
    """Examples/s of the same training steps under Lightning and in a plain loop."""
    import lightning as L
    from torch.utils.data import DataLoader

    loader = DataLoader(items, batch_size=batch_size, shuffle=False, collate_fn=bi.collate)
    state = {k: v.clone() for k, v in bi.state_dict().items()}

    def plain():
        bi.load_state_dict(state)
        bi.train()
        optimizer = bi.configure_optimizers()
        for step, batch in enumerate(loader):
            if step == steps:
                break
            scores, targets = bi.training_scores(batch)
            loss = torch.nn.functional.cross_entropy(scores, targets)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(bi.parameters(), 1.0)
            optimizer.step()

    def lightning():
        bi.load_state_dict(state)
        trainer = L.Trainer(max_steps=steps, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                            enable_progress_bar=False, enable_model_summary=False, gradient_clip_val=1.0,
                            limit_val_batches=0)
        trainer.fit(bi, train_dataloaders=loader)

    examples = steps * batch_size
    plain_s, lightning_s = timed(plain, 1), timed(lightning, 1)
    return {"steps": steps, "batch_size": batch_size, "plain_examples_per_s": examples / plain_s,
            "lightning_examples_per_s": examples / lightning_s, "lightning_overhead": lightning_s / plain_s - 1.0}


def rounded(value):
    """``value`` with every float rounded to 3 decimals, however deeply nested."""
    if isinstance(value, float):
        return round(value, 3)
    if isinstance(value, dict):
        return {key: rounded(item) for key, item in value.items()}
    if isinstance(value, list):
        return [rounded(item) for item in value]
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sim-dir", required=True, help="a LIGHT-sim corpus directory")
    parser.add_argument("--bi", help="a saved bi-ranker (default: untrained, default encoder)")
    parser.add_argument("--cross", help="a saved cross-ranker (default: untrained, default encoder)")
    parser.add_argument("--emote-examples", type=int, default=500, help="Table 10 examples (test seen, emote)")
    parser.add_argument("--index-size", type=int, default=100_000)
    parser.add_argument("--index-sim-dir", action="append", default=[],
                        help="more LIGHT-sim corpora whose utterances join the index (repeatable)")
    parser.add_argument("--queries", type=int, default=512)
    parser.add_argument("--train-steps", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--context-tokens", default="",
                        help="comma list of context budgets to time parts 1-2 at (default: each model's own)")
    parser.add_argument("--skip", default="", help="comma list of parts to skip: table10,retrieval,training")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    skip = set(filter(None, args.skip.split(",")))
    budgets = [int(b) for b in args.context_tokens.split(",") if b] or [None]

    bi = BiRanker.from_pretrained(args.bi) if args.bi else BiRanker()
    report: dict = {"threads": torch.get_num_threads(), "bi": args.bi or "untrained default",
                    "cross": args.cross or "untrained default"}
    if "table10" not in skip:
        cross = CrossRanker.from_pretrained(args.cross) if args.cross else CrossRanker()
        emote = LightDataModule("emote", source="sim", sim_dir=args.sim_dir, limit={"test": args.emote_examples})
        items = [emote.dataset("test")[i] for i in range(len(emote.dataset("test")))]
        report["table10"] = []
        for budget in budgets:
            with context_budget([bi, cross], budget):
                row = {"context_tokens": bi.hparams.max_context_tokens,
                       **table10(bi, cross, items, args.repeats, args.batch_size)}
            report["table10"].append(row)
            print(json.dumps({"table10": row}), flush=True)
    dialogue = LightDataModule("dialogue", source="sim", sim_dir=args.sim_dir)
    if "retrieval" not in skip:
        corpora = [dialogue] + [LightDataModule("dialogue", source="sim", sim_dir=d) for d in args.index_sim_dir]
        utterances = list(dict.fromkeys(turn.speech for corpus in corpora for split in corpus.episodes().values()
                                        for episode in split for turn in episode.turns if turn.speech))
        utterances = utterances[: args.index_size]
        queries = dialogue.contexts("test")[: args.queries]
        index, built = build_index(bi, utterances)
        report["retrieval"] = {**built, "by_context_tokens": []}
        for budget in budgets:
            with context_budget([bi], budget):
                row = {"context_tokens": bi.hparams.max_context_tokens,
                       **retrieval(bi, index, queries, k=10, repeats=args.repeats)}
            report["retrieval"]["by_context_tokens"].append(row)
            print(json.dumps({"retrieval": row}), flush=True)
    if "training" not in skip:
        train = dialogue.dataset("train")
        items = [train[i] for i in range(args.train_steps * 16)]
        report["training"] = training_speed(bi, items, 16, args.train_steps)
    if args.json:
        print(json.dumps(rounded(report)))


if __name__ == "__main__":
    main()
