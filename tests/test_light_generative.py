"""The generative transformer: both starting points train from the recipe, rank by likelihood,
generate, round-trip through save_pretrained, and report perplexity and F1 in `zoo eval light`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from light_rankers_support import make_tiny_backbone, make_tiny_corpus

from zoo import GenerativeTransformer
from zoo.cli import main
from zoo.grounded import Grounded
from zoo.light.datamodule import LightDataModule
from zoo.models.generative import tie_decoder_to_encoder
from zoo.training.runner import run

REPO = Path(__file__).resolve().parent.parent
RECIPE = "light-generative"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return make_tiny_corpus(tmp_path_factory.mktemp("light") / "sim")


def tiny(corpus: Path, run_dir: Path, **extra: str) -> list[str]:
    options = {
        "data.sim_dir": str(corpus), "run_dir": str(run_dir), "logger.kind": "none", "threads": "1",
        "data.limit": "{train: 64, valid: 16, test: 16, test_unseen: 16}", "data.batch_size": "8",
        "data.eval_batch_size": "8", "model.options.vocabulary_size": "400", "model.options.d_model": "32",
        "model.options.layers": "1", "model.options.heads": "2", "model.options.ffn_dim": "64",
        "model.options.max_context_tokens": "96", "model.options.max_grounding_tokens": "32",
        "model.options.max_target_tokens": "16", "model.options.max_new_tokens": "8",
        "model.options.beam_size": "2", "model.options.validation_generations": "4", "trainer.max_epochs": "2",
        "trainer.val_check_interval": "1.0", "trainer.enable_progress_bar": "false",
        "trainer.enable_model_summary": "false", "trainer.accelerator": "cpu",
        **extra,
    }
    return [f"{key}={value}" for key, value in options.items()]


@pytest.fixture(scope="module")
def trained(corpus, tmp_path_factory) -> tuple[dict, Path]:
    run_dir = tmp_path_factory.mktemp("generative")
    return run(RECIPE, tiny(corpus, run_dir)).results, run_dir


@pytest.mark.slow
def test_the_scratch_recipe_trains_and_reports_table_6_metrics(trained):
    results, run_dir = trained
    for split in ("test", "test_unseen"):
        assert results[f"{split}/ppl"] > 1.0 and results[f"{split}/word_ppl"] > 1.0
        assert 0.0 <= results[f"{split}/f1"] <= 1.0 and 0.0 <= results[f"{split}/r_at_1"] <= 1.0
    assert (run_dir / "pretrained" / "tokenizer").is_dir()


@pytest.mark.slow
def test_training_lowers_the_perplexity(corpus, trained, tmp_path):
    results, _ = trained
    untrained = run(RECIPE, tiny(corpus, tmp_path, **{"trainer.max_epochs": "0"})).results
    assert results["test/ppl"] < untrained["test/ppl"]
    assert results["test/ppl"] < 400  # below a uniform guess over the 400-token vocabulary


@pytest.mark.slow
def test_saved_model_reloads_to_the_same_scores_and_generates(trained, corpus):
    _, run_dir = trained
    model = Grounded.from_pretrained(run_dir / "pretrained")
    assert isinstance(model, GenerativeTransformer)
    dataset = LightDataModule("dialogue", source="sim", sim_dir=corpus).dataset("test")
    items = [dataset[i] for i in range(3)]
    contexts, candidates = [i.context for i in items], [list(i.candidates) for i in items]
    first = model.score(contexts, candidates)
    again = Grounded.from_pretrained(run_dir / "pretrained").score(contexts, candidates)
    torch.testing.assert_close(first, again)
    assert first.shape == (3, 20) and torch.isfinite(first).all() and (first <= 0).all()  # mean log-probabilities
    ranked = model.rank(contexts[0], candidates[0])
    assert sorted(c for c, _ in ranked) == sorted(candidates[0])
    outputs = model.generate(contexts[:2], beam_size=2, max_new_tokens=6)
    assert len(outputs) == 2 and all(isinstance(o, str) for o in outputs)


@pytest.mark.slow
def test_eval_light_reports_perplexity_f1_and_recall(trained, corpus, capsys):
    _, run_dir = trained
    code = main(["eval", "light", "--model", str(run_dir / "pretrained"), "--task", "dialogue", "--split", "valid",
                 "--source", "sim", "--sim-dir", str(corpus), "--limit", "8", "--generations", "3", "--json"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)  # stdout holds the JSON object alone
    assert {"ppl", "word_ppl", "f1", "r_at_1"} <= summary.keys() and summary["f1_n"] == 3
    assert main(["eval", "light", "--model", str(run_dir / "pretrained"), "--versus", str(run_dir / "pretrained"),
                 "--split", "valid", "--source", "sim", "--sim-dir", str(corpus), "--limit", "8", "--generations", "1",
                 "--bootstrap", "50", "--json"]) == 0
    against_itself = json.loads(capsys.readouterr().out)
    low, high = against_itself["word_ppl_ci95"]
    assert low <= against_itself["word_ppl"] == summary["word_ppl"] <= high
    versus = against_itself["versus"]
    assert versus["word_ppl"] == summary["word_ppl"] and versus["word_ppl_ratio"] == 1.0
    assert versus["word_ppl_ratio_ci95"] == [1.0, 1.0]
    assert main(["light", "generate", "--model", str(run_dir / "pretrained"), "--split", "valid", "--index", "1",
                 "--source", "sim", "--sim-dir", str(corpus), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["gold"] and isinstance(shown["generated"], str)


@pytest.mark.slow
def test_the_minilm_start_shares_encoder_and_decoder_weights(tmp_path, corpus):
    backbone = make_tiny_backbone(tmp_path / "tiny-bert")
    model = GenerativeTransformer(start="minilm", backbone=str(backbone), max_context_tokens=64, max_target_tokens=12)
    assert all(module.training for module in model.modules())  # fine-tuned with its dropout on
    encoder, decoder = model.seq2seq.encoder, model.seq2seq.decoder.bert
    assert decoder.encoder.layer[0].attention.self.query.weight is encoder.encoder.layer[0].attention.self.query.weight
    assert decoder.embeddings.word_embeddings.weight is encoder.embeddings.word_embeddings.weight
    assert model.seq2seq.decoder.cls.predictions.decoder.weight is encoder.embeddings.word_embeddings.weight
    assert decoder.encoder.layer[0].attention.self.is_causal  # the decoder stays causal
    assert tie_decoder_to_encoder(encoder, decoder) > 0
    dataset = LightDataModule("dialogue", source="sim", sim_dir=corpus, limit=8).dataset("train")
    batch = model.collate([dataset[i] for i in range(4)])
    optimizer = model.configure_optimizers()
    model.log = lambda *args, **kwargs: None
    losses = []
    for _ in range(4):
        loss = model.training_step(batch, 0)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    model.save_pretrained(tmp_path / "saved")
    reloaded = Grounded.from_pretrained(tmp_path / "saved")
    torch.testing.assert_close(reloaded.score([dataset[0].context], [list(dataset[0].candidates)]),
                               model.score([dataset[0].context], [list(dataset[0].candidates)]))


def test_bpe_vocabulary_is_learned_deterministically_from_train(corpus):
    dataset = LightDataModule("dialogue", source="sim", sim_dir=corpus, limit=32).dataset("train")
    first, second = GenerativeTransformer(vocabulary_size=300), GenerativeTransformer(vocabulary_size=300)
    first.setup_from_data(dataset)
    second.setup_from_data(dataset)
    assert first.tokenizer.get_vocab() == second.tokenizer.get_vocab()
    assert len(first.tokenizer) <= 300
