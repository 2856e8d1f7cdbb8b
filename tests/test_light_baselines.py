"""LIGHT baselines, metrics, LightDataModule and ``zoo eval light`` on a small LIGHT-sim corpus."""

from __future__ import annotations

import json
import logging

import pytest
import torch

from zoo.cli import main
from zoo.grounded import Grounded
from zoo.light.datamodule import LightDataModule, default_collate
from zoo.light.items import LightItem
from zoo.light.environment import authored_world
from zoo.light.evaluate import evaluate_ranker, fit_fasttext, fit_ir, metric_name
from zoo.light.metrics import MeanReciprocalRank, RankingAccuracy, RecallAtK, expected_hits
from zoo.light.sim import SimConfig, SimCorpus, generate_corpus, write_corpus
from zoo.models.light_baselines import CandidatesOnlyRanker, FastTextRanker, IRRanker, RandomRanker
from zoo.factory import create_model, list_models

SMALL = SimConfig(train=150, valid=20, test=60, test_unseen=30, world="authored")


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory):
    world = authored_world()
    return write_corpus(generate_corpus(SMALL, world), tmp_path_factory.mktemp("light") / "sim", SMALL, world)


@pytest.fixture(scope="module")
def dialogue(corpus_dir):
    return LightDataModule("dialogue", source="sim", sim_dir=corpus_dir)


# ------------------------------------------------------------------------------------ metrics
def test_recall_at_k_counts_ties_by_their_expectation():
    scores = torch.tensor([[3.0, 1.0, 2.0], [1.0, 1.0, 1.0], [0.0, 5.0, float("-inf")]])
    target = torch.tensor([0, 1, 0])
    assert expected_hits(scores, target).tolist() == pytest.approx([1.0, 1 / 3, 0.0])
    recall = RecallAtK(1)
    recall.update(scores, target)
    assert float(recall.compute()) == pytest.approx((1 + 1 / 3) / 3)
    top2 = RecallAtK(2)
    top2.update(scores, target)
    assert float(top2.compute()) == pytest.approx((1 + 2 / 3 + 1) / 3)
    accuracy = RankingAccuracy()
    accuracy.update(scores[:1], target[:1])
    assert float(accuracy.compute()) == 1.0
    mrr = MeanReciprocalRank()
    mrr.update(scores, target)
    assert float(mrr.compute()) == pytest.approx((1 + 1 / 2 + 1 / 2) / 3)
    with pytest.raises(ValueError):
        expected_hits(scores, torch.tensor([2, 0, 2]))  # gold in the padding
    with pytest.raises(ValueError):
        RecallAtK(1).compute()


def test_metric_names_follow_the_paper():
    assert metric_name("dialogue") == "r_at_1"
    assert metric_name("action") == metric_name("emote") == "accuracy"


# ------------------------------------------------------------------------------------ data
@pytest.mark.slow
def test_datamodule_items_batches_and_collate_hook(corpus_dir):
    module = LightDataModule("emote", source="sim", sim_dir=corpus_dir, batch_size=4)
    module.prepare_data()
    module.setup("fit")
    assert module.label == "LIGHT-sim" and module.resolve_source() == "sim"
    item = module.dataset("train")[0]
    assert isinstance(item, LightItem) and item.candidates[item.label] == item.example.label
    assert item.context.startswith("_task_emote\n_setting_name ")
    batch = next(iter(module.train_dataloader()))
    assert set(batch) == {"contexts", "candidates", "labels", "examples"} and len(batch["labels"]) == 4
    module.collate = lambda items: len(items)
    assert next(iter(module.val_dataloader())) == 4
    unseen, seen = module.test_dataloader()[1], module.test_dataloader()[0]
    assert len(unseen.dataset) and len(seen.dataset)
    limited = LightDataModule("dialogue", source="sim", sim_dir=corpus_dir, limit=7)
    assert len(limited.examples("test")) == 7
    assert default_collate([item])["labels"].tolist() == [item.label]
    with pytest.raises(ValueError):
        LightDataModule("dance")


def test_features_change_the_context(corpus_dir):
    full = LightDataModule("dialogue", source="sim", sim_dir=corpus_dir).contexts("test")[0]
    bare = LightDataModule("dialogue", "no_persona", source="sim", sim_dir=corpus_dir).contexts("test")[0]
    assert "_self_persona" in full and "_self_persona" not in bare


def test_auto_source_falls_back_to_a_cached_sim_corpus(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path))  # no release files, no environment
    module = LightDataModule("action", source="auto", sim=SimCorpus("tiny"))
    with caplog.at_level(logging.WARNING):
        module.prepare_data()
    assert module.label == "LIGHT-sim" and "LIGHT-sim" in caplog.text
    assert module.corpus_dir().parent.parent.name == "light"  # $ZOO_CACHE/light/sim/<fingerprint>
    assert module.examples("valid")


def test_official_source_requires_the_release(tmp_path, monkeypatch):
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError):
        LightDataModule(source="official").prepare_data()


# ------------------------------------------------------------------------------------ models
def test_models_are_registered():
    assert {"light-random", "light-ir", "light-fasttext", "light-candidates-only"} <= set(list_models("light-*"))
    assert isinstance(create_model("light-ir"), Grounded)


def test_rank_puts_the_best_first_and_scores_pad_with_minus_infinity(dialogue):
    ir = fit_ir(IRRanker(), dialogue)
    ranked = ir.rank("_self_say I love my old brass lantern", ["hello", "the brass lantern is mine", "no"])
    assert ranked[0][0] == "the brass lantern is mine" and ranked[0][1] > ranked[-1][1]
    scores = ir.score(["a", "b"], [["x"], ["y", "z"]])
    assert scores.shape == (2, 2) and scores[0, 1] == float("-inf")


@pytest.mark.slow
def test_random_is_chance_and_ir_beats_it(dialogue, corpus_dir):
    ir = fit_ir(IRRanker(), dialogue)
    random_result = evaluate_ranker(RandomRanker(seed=1), dialogue.dataset("test"), "dialogue")
    ir_result = evaluate_ranker(ir, dialogue.dataset("test"), "dialogue")
    assert random_result["chance"] == pytest.approx(0.05) and abs(random_result["r_at_1"] - 0.05) < 0.04
    assert ir_result["r_at_1"] > 3 * random_result["r_at_1"] and ir_result["n"] == random_result["n"]
    for task in ("action", "emote"):
        module = LightDataModule(task, source="sim", sim_dir=corpus_dir)
        result = evaluate_ranker(fit_ir(IRRanker(), module), module.dataset("test"), task)
        assert result["accuracy"] > result["chance"], task


def test_ir_saves_and_loads(dialogue, tmp_path):
    ir = fit_ir(IRRanker(), dialogue)
    contexts, candidates = dialogue.contexts("valid")[:5], [list(e.candidates) for e in dialogue.examples("valid")[:5]]
    ir.save_pretrained(tmp_path / "ir")
    loaded = Grounded.from_pretrained(tmp_path / "ir")
    assert isinstance(loaded, IRRanker)
    assert torch.equal(loaded.score(contexts, candidates), ir.score(contexts, candidates))
    with pytest.raises(RuntimeError, match="fit"):
        IRRanker().score(["x"], [["y"]])


@pytest.mark.slow
def test_fasttext_trains_with_lightning_and_round_trips(corpus_dir, tmp_path):
    torch.manual_seed(0)
    module = LightDataModule("emote", source="sim", sim_dir=corpus_dir)
    model = FastTextRanker(dim=16, buckets=1 << 14)
    before = evaluate_ranker(model, module.dataset("train"), "emote")["mrr"]
    fit_fasttext(model, module, epochs=8, batch_size=32)
    after = evaluate_ranker(model, module.dataset("train"), "emote")
    assert after["mrr"] > before and after["accuracy"] > after["chance"]
    assert module.collate is default_collate  # the training collate was put back
    model.save_pretrained(tmp_path / "ft")
    loaded = Grounded.from_pretrained(tmp_path / "ft")
    items = [module.dataset("test")[i] for i in range(4)]
    args = ([i.context for i in items], [list(i.candidates) for i in items])
    assert torch.allclose(loaded.score(*args), model.score(*args))


def test_candidates_only_scorer_ignores_the_context():
    model = CandidatesOnlyRanker()
    torch.nn.init.normal_(model.candidate_bias.weight)
    torch.nn.init.normal_(model.context_embedding.weight)
    torch.nn.init.normal_(model.candidate_embedding.weight)
    candidates = [["smile", "frown", "get apple"]]
    assert torch.equal(model.score(["_self_say I am so happy"], candidates), model.score(["totally different"], candidates))
    assert model.hparams.use_context is False


# ------------------------------------------------------------------------------------ CLI
def last_json(capsys) -> dict:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


@pytest.mark.slow
def test_zoo_eval_light_prints_json_last(corpus_dir, capsys, tmp_path):
    common = ["--source", "sim", "--sim-dir", str(corpus_dir), "--json"]
    assert main(["eval", "light", "--model", "random", "--task", "dialogue", *common]) == 0
    result = last_json(capsys)
    assert result["data"] == "LIGHT-sim" and result["split"] == "test" and result["n"] > 0 and "r_at_1" in result
    assert main(["eval", "light", "--model", "ir", "--task", "action", "--split", "test_unseen",
                 "--features", "no_setting", *common]) == 0
    result = last_json(capsys)
    assert result["features"] == "no_setting" and "accuracy" in result
    saved = tmp_path / "ft"
    assert main(["eval", "light", "--model", "fasttext", "--task", "emote", "--epochs", "1", "--save", str(saved),
                 *common]) == 0
    trained = last_json(capsys)
    assert main(["eval", "light", "--model", str(saved), "--task", "emote", *common]) == 0
    assert last_json(capsys)["accuracy"] == trained["accuracy"]
    assert main(["eval", "light", "--model", str(tmp_path / "missing"), *common]) == 2


def test_top1_f1_scores_the_retrieved_utterance_like_a_generation():
    from zoo.light.datamodule import LightDataset
    from zoo.light.examples import LightExample

    examples = [LightExample("hi", "the old king is here", ("the old king is here", "a dog barks"), True, "speech"),
                LightExample("hi", "where is the king", ("where is the king", "the king sleeps now"), True, "speech")]

    class SecondCandidate:
        def score(self, contexts, candidates):
            return torch.tensor([[0.0, 1.0]] * len(contexts))

    result = evaluate_ranker(SecondCandidate(), LightDataset(examples, ["hi", "hi"]), "dialogue")
    # "dog barks" shares nothing with "old king is here"; "king sleeps now" vs "where is king": P 1/3, R 1/3.
    assert result["r_at_1"] == 0.0 and result["top1_f1"] == pytest.approx((0.0 + 1 / 3) / 2, abs=1e-6)
    perfect = evaluate_ranker(IRRanker().fit(["the old king is here", "where is the king"]),
                              LightDataset(examples, ["the old king is here", "where is the king"]), "dialogue")
    assert perfect["top1_f1"] == pytest.approx(perfect["r_at_1"]) == pytest.approx(1.0)
