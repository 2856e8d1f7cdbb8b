"""Adding a model to the zoo is one model file with its registration line, and a recipe YAML that
names it: a package written here, outside the zoo, holds a new LIGHT ranker and a new Blocks
objective; ``zoo train RECIPE.yaml --import MODULE`` trains each (the runner, the data, the
checkpoints, the export and results.json are the zoo's), the export loads through the factory,
and not one file under zoo/ changed. A ranker that lacks what the runner calls is refused in one
line before any run directory is made."""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

RANKER = '''"""A LIGHT ranker: a candidate scores the learned weights of the words it shares with the context."""

import zlib

import torch
from torch import nn

from zoo.models.light_ranker import pad_scores
from zoo.models.neural_ranker import NeuralRanker
from zoo.registry import register_model


@register_model("light-word-overlap")
class WordOverlapRanker(NeuralRanker):
    """Each shared word adds its bucket's weight; trained by cross-entropy over the candidates.

    Args:
        buckets: hashed word buckets, one weight each.
        learning_rate: AdamW's step size.
    """

    def __init__(self, buckets: int = 512, learning_rate: float = 0.05):
        super().__init__()
        self.save_hyperparameters()
        self.weights = nn.Embedding(buckets, 1)
        nn.init.ones_(self.weights.weight)

    def shared_buckets(self, context: str, candidate: str) -> torch.Tensor:
        shared = set(context.lower().split()) & set(candidate.lower().split())
        buckets = sorted(zlib.crc32(word.encode()) % self.hparams.buckets for word in shared)
        return torch.tensor(buckets, dtype=torch.long, device=self.weights.weight.device)

    def collate(self, items):
        return {"contexts": [i.context for i in items], "candidates": [list(i.candidates) for i in items],
                "labels": torch.tensor([i.label for i in items])}

    def forward(self, batch):
        return pad_scores([torch.stack([self.weights(self.shared_buckets(context, c)).sum() for c in candidates])
                           for context, candidates in zip(batch["contexts"], batch["candidates"])])
'''

OBJECTIVE = '''"""Supervised learning of the block policy that counts a STOP decision half."""

import torch

from zoo.models.blocks import BlocksSupervised
from zoo.models.blocks.policy import register_objective


@register_objective("stop-averse", "supervised, with the demonstrations' STOPs down-weighted")
class BlocksStopAverse(BlocksSupervised):
    """The demonstrations' STOP decisions weigh half in the loss."""

    def training_step(self, batch: dict, batch_idx: int) -> torch.Tensor:
        block, direction = self(batch["images"], batch["tokens"], batch["lengths"], batch["previous_action"])
        weights = torch.where(batch["action"] == 80, 0.5, 1.0)
        log_p = self.joint_log_probs(block, direction).gather(1, batch["action"][:, None]).squeeze(1)
        loss = -(weights * log_p).mean()
        self.log("train/loss", loss)
        return loss
'''

BROKEN_RANKER = '''"""A LIGHT ranker that scores but defines none of what training needs (no collate, no validation)."""

import torch

from zoo.models.light_ranker import LightRanker
from zoo.registry import register_model


@register_model("light-word-overlap")
class WordOverlapRanker(LightRanker):
    """Scores every candidate zero."""

    def __init__(self, buckets: int = 512):
        super().__init__()
        self.save_hyperparameters()

    def score_lists(self, contexts, candidates):
        return [torch.zeros(len(c)) for c in candidates]
'''


def write_package(root: Path, ranker: str = RANKER) -> Path:
    """``my_models``: each model's file and the recipe naming it (a model.name and a run_dir)."""
    package = root / "my_models"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "word_overlap.py").write_text(ranker)
    (package / "light_word_overlap.yaml").write_text(
        "# Word overlap on LIGHT, merged over light_common.yaml.\nrun_dir: runs/light/word-overlap\n"
        "model:\n  name: light-word-overlap\n")
    (package / "stop_averse.py").write_text(OBJECTIVE)
    (package / "blocks_stop_averse.yaml").write_text(
        "# The stop-averse objective, merged over blocks_common.yaml.\nrun_dir: runs/blocks/stop-averse\n"
        "model:\n  name: blocks-stop-averse\n")
    return package


def zoo_train(root: Path, module: str, recipe: Path, *overrides: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(REPO)]), "WANDB_MODE": "offline"}
    return subprocess.run([sys.executable, "-m", "zoo.cli", "train", "--import", module, str(recipe), "--tiny",
                           "threads=1", *overrides], cwd=root, env=env, capture_output=True, text=True, timeout=600)


def zoo_files() -> dict[str, str]:
    """Every file of the package (path -> sha256), to show that adding a model changes none."""
    return {str(path.relative_to(REPO)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted((REPO / "zoo").rglob("*")) if path.is_file() and "__pycache__" not in path.parts}


@pytest.fixture
def scratch_registry(monkeypatch):
    """Registrations made by importing the written package vanish after the test."""
    import zoo.models.blocks.policy as policy
    import zoo.registry as registry
    from zoo.factory import list_models

    list_models()  # every model family registered first
    monkeypatch.setattr(registry, "_MODELS", dict(registry._MODELS))
    monkeypatch.setattr(registry, "_CLASSES", dict(registry._CLASSES))
    monkeypatch.setattr(policy, "_OBJECTIVES", dict(policy._OBJECTIVES))
    yield
    for name in [name for name in sys.modules if name == "my_models" or name.startswith("my_models.")]:
        del sys.modules[name]


@pytest.mark.slow
def test_a_new_ranker_and_a_new_objective_train_with_zoo_train_and_change_no_zoo_file(tmp_path, scratch_registry,
                                                                                     monkeypatch):
    before = zoo_files()
    package = write_package(tmp_path)
    assert all(source.count("@register_") == 1 for source in (RANKER, OBJECTIVE))

    ranker_run, objective_run = tmp_path / "runs" / "ranker", tmp_path / "runs" / "objective"
    for module, recipe, run_dir in (("my_models.word_overlap", "light_word_overlap.yaml", ranker_run),
                                    ("my_models.stop_averse", "blocks_stop_averse.yaml", objective_run)):
        completed = zoo_train(tmp_path, module, package / recipe, f"run_dir={run_dir}")
        assert completed.returncode == 0, completed.stderr[-3000:]
        results = json.loads((run_dir / "results.json").read_text())
        assert results["model"] in ("light-word-overlap", "blocks-stop-averse") and results["global_step"] > 0
    assert "test/r_at_1" in json.loads((ranker_run / "results.json").read_text())  # the best epoch, tested
    assert "tuning/mean_error" in json.loads((objective_run / "results.json").read_text())["metrics"]

    monkeypatch.syspath_prepend(str(tmp_path))  # importing a model's module registers it, as zoo train --import did
    importlib.import_module("my_models.word_overlap"), importlib.import_module("my_models.stop_averse")
    from zoo.grounded import Grounded

    ranker = Grounded.from_pretrained(ranker_run / "pretrained")
    objective = Grounded.from_pretrained(objective_run / "pretrained")
    assert type(ranker).__name__ == "WordOverlapRanker" and ranker.hparams.buckets == 512
    assert type(objective).__name__ == "BlocksStopAverse"
    assert zoo_files() == before  # the model files and recipes are the package's; the zoo is as it was


@pytest.mark.slow
def test_a_ranker_without_what_the_runner_calls_is_refused_in_one_line(tmp_path):
    package = write_package(tmp_path, ranker=BROKEN_RANKER)
    run_dir = tmp_path / "runs" / "broken"
    completed = zoo_train(tmp_path, "my_models.word_overlap", package / "light_word_overlap.yaml", f"run_dir={run_dir}")
    assert completed.returncode != 0
    assert completed.stderr.strip().splitlines()[-1] == (
        "zoo train cannot train light-word-overlap: WordOverlapRanker defines no collate(items) -> batch, "
        "setup_from_data(train), validation_step logging valid/r_at_1, test_step; subclass "
        "zoo.models.neural_ranker.NeuralRanker, which defines them")
    assert not run_dir.exists()  # refused before the run directory is made
