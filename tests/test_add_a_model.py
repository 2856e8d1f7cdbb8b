"""Adding a model to the zoo is one model file with its registration line: a tiny LIGHT ranker,
written to a file of its own, is then built, trained, scored, saved and loaded through the
factory (``create_model``, ``list_models``, ``Grounded.from_pretrained``) with no other file of
the zoo changed. (A Blocks objective: tests/test_blocks_policies.py,
``test_a_new_objective_is_one_class_and_its_registration``.)"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

import lightning as L
import pytest
import torch

REPO = Path(__file__).resolve().parent.parent

MODEL_FILE = '''"""A tiny LIGHT ranker: a candidate scores the learned weights of the words it shares with the context."""

import zlib

import torch
from torch import nn
from torch.nn import functional as F

from zoo.models.light_ranker import LightRanker, pad_scores
from zoo.registry import register_model


@register_model("light-word-overlap")
class WordOverlapRanker(LightRanker):
    """Each shared word adds its bucket's weight; trained by cross-entropy over the candidates."""

    def __init__(self, buckets: int = 512, learning_rate: float = 0.5):
        super().__init__()
        self.save_hyperparameters()
        self.weights = nn.Embedding(buckets, 1)
        nn.init.ones_(self.weights.weight)

    def shared_buckets(self, context: str, candidate: str) -> torch.Tensor:
        shared = set(context.lower().split()) & set(candidate.lower().split())
        return torch.tensor(sorted(zlib.crc32(w.encode()) % self.hparams.buckets for w in shared), dtype=torch.long)

    def score_lists(self, contexts, candidates):
        return [torch.stack([self.weights(self.shared_buckets(context, c)).sum() for c in cands])
                for context, cands in zip(contexts, candidates)]

    def collate(self, items):
        return {"contexts": [i.context for i in items], "candidates": [list(i.candidates) for i in items],
                "labels": torch.tensor([i.label for i in items])}

    def training_step(self, batch, batch_idx):
        scores = pad_scores(self.score_lists(batch["contexts"], batch["candidates"]))
        return F.cross_entropy(scores, batch["labels"])

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.learning_rate)
'''


@dataclass(frozen=True)
class Item:
    context: str
    candidates: tuple[str, ...]
    label: int


def examples() -> list[Item]:
    """The gold shares 'sword' with the context; the distractor shares 'the', which training must learn to ignore."""
    return [Item("the knight draws the sword", ("the end of the road", "a sword for you"), 1),
            Item("the guard sharpens the sword", ("the sword is sharp", "the the the"), 0)] * 8


def zoo_files() -> dict[str, str]:
    """Every file of the package (path -> sha256), to show that adding a model changes none."""
    return {str(path.relative_to(REPO)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted((REPO / "zoo").rglob("*")) if path.is_file() and "__pycache__" not in path.parts}


@pytest.fixture
def scratch_registry(monkeypatch):
    """The registration vanishes after the test."""
    import zoo.registry as registry
    from zoo.factory import list_models

    list_models()  # every model family registered first
    monkeypatch.setattr(registry, "_MODELS", dict(registry._MODELS))
    monkeypatch.setattr(registry, "_CLASSES", dict(registry._CLASSES))
    yield
    sys.modules.pop("word_overlap_ranker", None)


def test_a_new_light_model_is_one_file_with_its_registration_line(scratch_registry, tmp_path):
    from zoo.factory import create_model, list_models, model_class
    from zoo.grounded import Grounded

    before = zoo_files()
    added = [tmp_path / "word_overlap_ranker.py"]
    added[0].write_text(MODEL_FILE)
    assert len(added) == 1 and sum(line.startswith("@register_model(") for line in MODEL_FILE.splitlines()) == 1
    spec = importlib.util.spec_from_file_location("word_overlap_ranker", added[0])
    module = importlib.util.module_from_spec(spec)
    sys.modules["word_overlap_ranker"] = module  # a class defined in it must be importable by its module name
    spec.loader.exec_module(module)

    assert "light-word-overlap" in list_models("light-*")
    model = create_model("light-word-overlap", buckets=256)
    assert model.domain == "light" and model.hparams.buckets == 256
    context, candidates = "the knight draws the sword", ["the end of the road", "a sword for you"]
    assert model.rank(context, candidates)[0][0] == candidates[0]  # untrained: one shared word each, a tie

    loader = torch.utils.data.DataLoader(examples(), batch_size=4, collate_fn=model.collate)
    L.Trainer(max_epochs=3, logger=False, enable_checkpointing=False, enable_progress_bar=False,
              enable_model_summary=False, accelerator="cpu", default_root_dir=tmp_path).fit(model, loader)
    assert model.rank(context, candidates)[0][0] == candidates[1]  # trained: 'sword' counts, 'the' does not

    saved = model.save_pretrained(tmp_path / "light-word-overlap")
    assert model_class("WordOverlapRanker") is module.WordOverlapRanker
    loaded = Grounded.from_pretrained(saved)
    assert type(loaded) is module.WordOverlapRanker and loaded.hparams.buckets == 256
    torch.testing.assert_close(loaded.score([context], [candidates]), model.eval().score([context], [candidates]))
    assert zoo_files() == before  # no file of the zoo was touched: the one file added is the model's
