"""A run that ends on ``trainer.max_steps`` in the middle of an epoch still gets its final
evaluation, so its metrics, best checkpoint and results are not empty."""

from __future__ import annotations

import json

import lightning as L
from lightning.pytorch.demos.boring_classes import BoringModel

from zoo.callbacks.final_validation import ValidateAtMaxSteps


class CountingValidations(L.Callback):
    def __init__(self):
        self.at_steps: list[int] = []

    def on_validation_end(self, trainer, pl_module):
        if not trainer.sanity_checking:
            self.at_steps.append(trainer.global_step)


def fit(tmp_path, *callbacks) -> CountingValidations:
    counting = CountingValidations()
    trainer = L.Trainer(default_root_dir=tmp_path, max_epochs=5, max_steps=7, limit_train_batches=20,
                        limit_val_batches=2, logger=False, enable_progress_bar=False, enable_model_summary=False,
                        enable_checkpointing=False, callbacks=[*callbacks, counting])
    trainer.fit(BoringModel())
    assert trainer.global_step == 7
    return counting


def test_lightning_alone_ends_a_max_steps_run_without_validating(tmp_path):
    assert fit(tmp_path).at_steps == []  # why ValidateAtMaxSteps exists


def test_the_step_that_reaches_max_steps_is_validated(tmp_path):
    assert fit(tmp_path, ValidateAtMaxSteps()).at_steps == [7]


def test_a_blocks_run_ended_by_max_steps_has_its_dev_and_tuning_errors_and_a_best_policy(tmp_path, caplog):
    """Blocks with ``trainer.max_steps=3`` of a 20-epoch recipe on 4 training examples: the
    plan says so, the rollout evaluation of the tuning and dev sets runs once, at step 3, and
    the best policy by it is exported."""
    import logging

    from test_blocks_training import TINY, recipe

    from zoo.threads import current_choice

    caplog.set_level(logging.INFO, logger="zoo.progress")
    run_dir = tmp_path / "run"
    recipe().main([*TINY, "trainer.max_epochs=20", "trainer.max_steps=3", "data.limit={train: 4, tuning: 2, dev: 2}",
                   "evaluation.dev_every_n_epochs=5", f"run_dir={run_dir}"])
    plan = next(m for m in caplog.messages if m.startswith("training BlocksSupervised"))
    assert plan == ("training BlocksSupervised: 4 batches per epoch, 20 epoch(s) to go, or until step 3 "
                    "(trainer.max_steps; 3 to go) (epoch 0 of 20), on " + str(current_choice()))
    (row,) = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert row["step"] == 3 and row["dev/mean_error"] >= 0 and row["tuning/mean_error"] >= 0
    assert list((run_dir / "checkpoints").glob("best-epoch*.ckpt"))
    assert (run_dir / "pretrained" / "model.safetensors").is_file()


def test_a_light_run_ended_by_max_steps_is_validated_and_keeps_its_best_epoch(tmp_path):
    """StarSpace with ``trainer.max_steps=2`` of a 3-epoch run: validation at step 2 gives
    the best checkpoint the test results and the export come from."""
    from pathlib import Path

    from light_rankers_support import make_tiny_corpus

    from zoo.training.runner import run

    corpus = make_tiny_corpus(tmp_path / "sim")
    run_dir = tmp_path / "run"
    results = run("light-starspace", [
        f"data.sim_dir={corpus}", f"run_dir={run_dir}", "logger.kind=none", "threads=1", "trainer.max_epochs=3",
        "trainer.max_steps=2", "data.batch_size=8", "model.options.dim=16", "model.options.min_count=1",
        "data.limit={train: 64, valid: 16, test: 16, test_unseen: 16}"]).results
    assert results["global_step"] == 2 and results["best_checkpoint"]
    (row,) = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert row["step"] == 2 and 0 <= row["valid/r_at_1"] <= 1
    assert 0 <= results["test/r_at_1"] <= 1
