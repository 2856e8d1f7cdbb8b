"""Evaluate and fit LIGHT rankers on a :class:`~zoo.light.datamodule.LightDataModule` split.

The metric follows the task: ``r_at_1`` (R@1 over the 20 candidates) for dialogue,
``accuracy`` (R@1 over the available actions or the 22 emotes) for action and emote; ``mrr``
is reported beside it, and with a :class:`~zoo.bootstrap_intervals.Bootstrap` each metric's interval
over examples (small yardsticks such as the real fixture need it). Results carry ``data``
(``LIGHT`` or ``LIGHT-sim``) so no number travels without its corpus.
"""

from __future__ import annotations

import math
import time
from typing import Any, Iterable, Sequence

import torch

from zoo.bootstrap_intervals import Bootstrap
from zoo.light.datamodule import LightDataModule, LightDataset
from zoo.light.examples import LightExample, label_type
from zoo.light.metrics import expected_hits, reciprocal_ranks
from zoo.count_progress import CountProgress


def metric_name(task: str) -> str:
    """``r_at_1`` for dialogue, ``accuracy`` for action and emote (the paper's metrics)."""
    return "r_at_1" if label_type(task) == "speech" else "accuracy"


@torch.no_grad()
def example_outcomes(model: Any, dataset: LightDataset, batch_size: int = 256,
                     progress: bool = False) -> dict[str, torch.Tensor]:
    """Per-example ``hit`` (expected hit@1, ties broken at random in expectation) and ``rr``
    (reciprocal rank of the gold) of ``model.score`` over every example of ``dataset``, in
    order: the means are R@1 / accuracy and MRR, the values are what an interval resamples.
    ``top`` is the index of the best-scored candidate (the first of tied ones)."""
    def score(contexts, candidates):
        return {None: model.score(contexts, candidates)}

    return _outcomes(score, model, dataset, batch_size, progress)[None]


@torch.no_grad()
def ranking_outcomes(model: Any, dataset: LightDataset, batch_size: int = 16,
                     progress: bool = False) -> dict[str, dict[str, torch.Tensor]]:
    """:func:`example_outcomes` of each way ``model`` ranks (its ``rankings``, its own first:
    a generator's mean log-probability per token and its PMI), from one pass of
    ``model.score_rankings`` over the candidates; empty for a model with one way."""
    if not getattr(model, "rankings", ()):
        return {}
    return _outcomes(model.score_rankings, model, dataset, batch_size, progress)


def _outcomes(score, model: Any, dataset: LightDataset, batch_size: int, progress: bool) -> dict:
    """Per-example outcomes of every score table ``score(contexts, candidates)`` returns by name."""
    rows: dict[Any, dict[str, list[torch.Tensor]]] = {}
    if hasattr(model, "eval"):
        model.eval()
    report = CountProgress(len(dataset), "examples ranked", progress)
    for start in range(0, len(dataset), batch_size):
        items = [dataset[i] for i in range(start, min(start + batch_size, len(dataset)))]
        for name, scores in score([i.context for i in items], [list(i.candidates) for i in items]).items():
            target = torch.tensor([i.label for i in items], dtype=torch.long, device=scores.device)
            row = rows.setdefault(name, {"hit": [], "rr": [], "top": []})
            row["hit"].append(expected_hits(scores, target, 1).double().cpu())
            row["rr"].append(reciprocal_ranks(scores, target).cpu())
            row["top"].append(scores.argmax(dim=-1).cpu())
        report.advance(len(items))
    report.close()
    if not rows:
        raise ValueError("the split has no examples for this task")
    return {name: {column: torch.cat(values) for column, values in row.items()} for name, row in rows.items()}


def evaluate_ranker(model: Any, dataset: LightDataset, task: str, batch_size: int = 256,
                    bootstrap: Bootstrap | None = None, progress: bool = False,
                    outcomes: dict[str, torch.Tensor] | None = None) -> dict[str, Any]:
    """R@1 / accuracy and MRR of ``model.score`` over every example of ``dataset``; with
    ``bootstrap``, also ``ci95`` (or the level asked): each metric's interval over examples.
    For dialogue, ``top1_f1``: unigram F1 (ParlAI's normalisation) of the top-ranked utterance
    against the gold, the metric a generative model's output is scored by, so retrieval and
    generation compare on one scale. ``outcomes``: :func:`example_outcomes` already computed."""
    outcomes = dict(outcomes) if outcomes is not None else example_outcomes(model, dataset, batch_size, progress)
    n = len(dataset)
    metric = metric_name(task)
    mean_candidates = sum(len(e.candidates) for e in dataset.examples) / n
    result: dict[str, Any] = {
        metric: round(float(outcomes["hit"].mean()), 6),
        "mrr": round(float(outcomes["rr"].mean()), 6),
        "n": n,
        "chance": round(sum(1.0 / len(e.candidates) for e in dataset.examples) / n, 6),
        "mean_candidates": round(mean_candidates, 3),
    }
    if metric == "r_at_1":
        from zoo.light.generation_metrics import unigram_f1

        outcomes["f1"] = torch.tensor([unigram_f1(e.candidates[int(top)], e.label)
                                       for e, top in zip(dataset.examples, outcomes["top"])], dtype=torch.double)
        result["top1_f1"] = round(float(outcomes["f1"].mean()), 6)
    if bootstrap is not None:
        key = f"ci{round(bootstrap.level * 100):d}"
        result[key] = {name: [round(bound, 6) for bound in bootstrap.interval(outcomes[column].numpy())]
                       for name, column in ((metric, "hit"), ("mrr", "rr"), ("top1_f1", "f1")) if column in outcomes}
        result["bootstrap"] = bootstrap.describe()
    return result


def paired_difference(first: dict[str, torch.Tensor], second: dict[str, torch.Tensor], metric: str,
                      bootstrap: Bootstrap) -> dict[str, Any]:
    """The first model's R@1 / accuracy minus the second's over the same examples, with a paired
    bootstrap interval (each resample takes the same examples for both): with 86 real cases,
    two unpaired +-10-point intervals overlap unless the models are ~20 points apart, while
    the paired interval of the difference is much narrower when the models agree on most cases."""
    if len(first["hit"]) != len(second["hit"]):
        raise ValueError(f"the two models were scored on {len(first['hit'])} and {len(second['hit'])} examples")
    difference, (low, high) = bootstrap.paired(first["hit"].tolist(), second["hit"].tolist())
    key = f"ci{round(bootstrap.level * 100):d}"
    return {metric: round(float(second["hit"].mean()), 6), "difference": round(difference, 6),
            key: [round(low, 6), round(high, 6)], "bootstrap": bootstrap.describe()}


@torch.no_grad()
def gold_likelihoods(model: Any, dataset: LightDataset, batch_size: int = 16,
                     progress: bool = False) -> dict[str, torch.Tensor]:
    """Per-example summed ``nll`` of the gold under a generative model, its ``tokens`` and its
    ``words`` (plus the end), in order: a perplexity is the exponential of a ratio of their
    sums, and the per-example values are what an interval or a paired comparison resamples."""
    nlls, tokens, words = [], [], []
    model.eval()
    report = CountProgress(len(dataset), "golds scored", progress)
    for start in range(0, len(dataset), batch_size):
        items = [dataset[i] for i in range(start, min(start + batch_size, len(dataset)))]
        batch = model.transfer_batch_to_device(model.collate(items), model.device, 0)
        nll, count = model.gold_nll(batch)
        nlls.append(nll.double().cpu())
        tokens.append(count.cpu())
        words.append(batch["target_words"].cpu())
        report.advance(len(items))
    report.close()
    if not nlls:
        raise ValueError("the split has no examples for this task")
    return {"nll": torch.cat(nlls), "tokens": torch.cat(tokens), "words": torch.cat(words)}


@torch.no_grad()
def evaluate_generation(model: Any, dataset: LightDataset, generations: int = 100, batch_size: int = 16,
                        progress: bool = False, bootstrap: Bootstrap | None = None,
                        likelihoods: dict[str, torch.Tensor] | None = None) -> dict[str, Any]:
    """What a generative model adds to ranking: ``ppl`` (token perplexity of the golds, as
    ParlAI: one exponential of the corpus-level mean NLL), ``word_ppl`` (the same NLL per
    gold word plus its end, comparable across vocabularies) over every example, and unigram
    ``f1`` of the beam-search output on the first ``generations`` examples. With ``bootstrap``,
    ``word_ppl_ci95``: the word perplexity's interval over examples. ``likelihoods``:
    :func:`gold_likelihoods` already computed."""
    from zoo.light.generation_metrics import UnigramF1

    gold = likelihoods if likelihoods is not None else gold_likelihoods(model, dataset, batch_size, progress)
    total = float(gold["nll"].sum())
    result: dict[str, Any] = {"ppl": round(math.exp(total / float(gold["tokens"].sum())), 4),
                              "word_ppl": round(math.exp(total / float(gold["words"].sum())), 4)}
    if bootstrap is not None:
        _, bounds = bootstrap.ratio(gold["nll"].numpy(), gold["words"].numpy())
        result[f"word_ppl_ci{round(bootstrap.level * 100):d}"] = [round(math.exp(b), 4) for b in bounds]
    f1 = UnigramF1()
    count = min(generations, len(dataset))
    report = CountProgress(count, "lines generated", progress)
    for start in range(0, count, batch_size):
        items = [dataset[i] for i in range(start, min(start + batch_size, count))]
        batch = model.collate(items)
        f1.update(model.generate(batch["contexts"]), batch["golds"])
        report.advance(len(items))
    report.close()
    if f1.total:
        result.update(f1=round(float(f1.compute()), 6), f1_n=int(f1.total))
    return result


def paired_word_perplexity(first: dict[str, torch.Tensor], second: dict[str, torch.Tensor],
                           bootstrap: Bootstrap) -> dict[str, Any]:
    """The first generator's word perplexity over the second's on the same golds, with a paired
    bootstrap interval: exp of the summed NLL difference per gold word, each resample taking the
    same examples for both (86 real lines of nine dialogues vary far more between them than two
    models do on one line). Below 1: the first predicts people's lines better."""
    if not torch.equal(first["words"], second["words"]):
        raise ValueError("the two generators were scored on different golds")
    log_ratio, (low, high) = bootstrap.ratio((first["nll"] - second["nll"]).numpy(), first["words"].numpy())
    key = f"ci{round(bootstrap.level * 100):d}"
    return {"word_ppl": round(math.exp(float(second["nll"].sum() / second["words"].sum())), 4),
            "word_ppl_ratio": round(math.exp(log_ratio), 4),
            f"word_ppl_ratio_{key}": [round(math.exp(low), 4), round(math.exp(high), 4)]}


def ir_training_texts(examples: Sequence[LightExample]) -> Iterable[str]:
    """What IR's TF-IDF weights are fitted on: every training example's text and label."""
    for example in examples:
        yield example.text
        yield example.label


def fit_ir(model: Any, datamodule: LightDataModule) -> Any:
    """Fit an :class:`~zoo.models.light_baselines.IRRanker` on the train split."""
    return model.fit(ir_training_texts(datamodule.examples("train")))


def fit_fasttext(model: Any, datamodule: LightDataModule, epochs: int = 5, batch_size: int = 256,
                 validate: bool = False, progress: bool = False) -> dict[str, float]:
    """Train a fastText-style ranker with a Lightning Trainer on the train split."""
    import lightning as L

    previous = datamodule.collate, datamodule.batch_size
    datamodule.collate, datamodule.batch_size = model.collate, batch_size
    trainer = L.Trainer(
        max_epochs=epochs, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
        enable_progress_bar=progress, enable_model_summary=False, num_sanity_val_steps=0,
        limit_val_batches=1.0 if validate else 0,
    )
    start = time.perf_counter()
    try:
        trainer.fit(model, datamodule=datamodule)
    finally:
        datamodule.collate, datamodule.batch_size = previous
    return {"train_seconds": round(time.perf_counter() - start, 1), "epochs": epochs}
