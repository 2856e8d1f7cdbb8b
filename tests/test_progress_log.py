"""A long run says what it costs within seconds, and leaves progress lines in a log file."""

from __future__ import annotations

import logging
from types import SimpleNamespace

from zoo.callbacks.progress_log import ProgressLog
from zoo.threads import use_threads


def fake_trainer(batches: int = 100, epochs: int = 3, epoch: int = 0):
    return SimpleNamespace(num_training_batches=batches, max_epochs=epochs, current_epoch=epoch,
                           progress_bar_metrics={"train/loss": 1.5}, callback_metrics={})


def test_the_plan_and_the_cost_of_the_whole_run_come_first(caplog):
    caplog.set_level(logging.INFO, logger="zoo.progress")
    use_threads("small")
    callback, trainer, module = ProgressLog(every_n_steps=1000, estimate_after_s=0.0, lines=False), fake_trainer(), object()
    callback.on_train_start(trainer, module)
    callback.on_train_epoch_start(trainer, module)
    for index in range(3):
        callback.on_train_batch_end(trainer, module, None, {"action": [0] * 8}, index)
    plan, estimate = caplog.messages  # the estimate at the second batch: 98 + 2 × 100 steps left
    assert plan == ("training object: 100 batches per epoch, 3 epoch(s) to go (epoch 0 of 3), "
                    "on 1 thread (small operations; threads=N to change)")
    assert "the 298 training steps left take about" in estimate and "rerun the same command to resume" in estimate


def test_without_a_terminal_progress_lines_come_every_n_steps(caplog):
    caplog.set_level(logging.INFO, logger="zoo.progress")
    callback, trainer, module = ProgressLog(every_n_steps=10, estimate_after_s=1e9), fake_trainer(), object()
    callback.on_train_epoch_start(trainer, module)
    for index in range(30):
        callback.on_train_batch_end(trainer, module, None, {"action": [0] * 8}, index)
    lines = [m for m in caplog.messages if m.startswith("epoch 0 step")]
    assert [line.split()[3] for line in lines] == ["10/100", "20/100", "30/100"]
    assert all("examples/s" in line and "train/loss=1.5" in line for line in lines)


def test_validation_and_test_passes_leave_lines_too_one_per_set_when_done(caplog):
    caplog.set_level(logging.INFO, logger="zoo.progress")
    callback, module = ProgressLog(every_n_steps=10, estimate_after_s=1e9), object()
    trainer = SimpleNamespace(sanity_checking=False, num_test_batches=[25, 5], num_val_batches=[3])
    for index in range(25):
        callback.on_test_batch_end(trainer, module, None, None, index, dataloader_idx=0)
    for index in range(5):
        callback.on_test_batch_end(trainer, module, None, None, index, dataloader_idx=1)
    lines = [m.split("  ")[0] for m in caplog.messages]
    assert lines[:2] == ["test set 1 batch 10/25", "test set 1 batch 20/25"]
    assert lines[2].startswith("test set 1: 25 batches done in") and lines[3].startswith("test set 2: 5 batches done")
    caplog.clear()
    trainer.sanity_checking = True  # Lightning's two-batch check before training says nothing
    for index in range(3):
        callback.on_validation_batch_end(trainer, module, None, None, index)
    assert caplog.messages == []
    trainer.sanity_checking = False
    for index in range(3):
        callback.on_validation_batch_end(trainer, module, None, None, index)
    assert len(caplog.messages) == 1 and caplog.messages[0].startswith("validation: 3 batches done in")


def test_the_estimate_counts_the_steps_trainer_max_steps_leaves_not_the_epochs(caplog):
    """``trainer.max_steps=20`` on a 20-epoch recipe: 18 steps left after the second batch, not
    the epochs' thousands, and the plan says where the run ends."""
    caplog.set_level(logging.INFO, logger="zoo.progress")
    callback, module = ProgressLog(every_n_steps=1000, estimate_after_s=0.0, lines=False), object()
    trainer = fake_trainer(batches=11_000, epochs=20)
    trainer.max_steps, trainer.global_step = 20, 0
    callback.on_train_start(trainer, module)
    callback.on_train_epoch_start(trainer, module)
    for index in range(2):
        trainer.global_step += 1  # Lightning calls on_train_batch_end after the optimizer step
        callback.on_train_batch_end(trainer, module, None, {"action": [0] * 8}, index)
    plan, estimate = caplog.messages
    assert "20 epoch(s) to go, or until step 20 (trainer.max_steps; 20 to go) (epoch 0 of 20), on " in plan
    assert "the 18 training steps left take about" in estimate


def test_a_batch_of_several_optimizer_steps_counts_as_one_batch_towards_max_steps(caplog):
    """A bandit batch of 4 episodes makes 4 optimizer steps: 40 steps to go are 10 batches."""
    caplog.set_level(logging.INFO, logger="zoo.progress")
    callback, module = ProgressLog(every_n_steps=1000, estimate_after_s=0.0, lines=False), object()
    trainer = fake_trainer(batches=1000, epochs=5)
    trainer.max_steps, trainer.global_step = 48, 0
    callback.on_train_epoch_start(trainer, module)
    for index in range(2):  # steps 4 and 8 after the two batches
        trainer.global_step += 4
        callback.on_train_batch_end(trainer, module, None, {"episodes": [0] * 4}, index)
    (estimate,) = caplog.messages
    assert "the 10 training steps left take about" in estimate


def test_progress_lines_count_down_to_max_steps_when_it_ends_the_run_first(caplog):
    caplog.set_level(logging.INFO, logger="zoo.progress")
    callback, module = ProgressLog(every_n_steps=10, estimate_after_s=1e9), object()
    trainer = fake_trainer(batches=11_000, epochs=20)
    trainer.max_steps, trainer.global_step = 60, 0
    callback.on_train_epoch_start(trainer, module)
    for index in range(20):
        trainer.global_step += 1
        callback.on_train_batch_end(trainer, module, None, {"action": [0] * 8}, index)
    lines = [m for m in caplog.messages if m.startswith("epoch 0 step")]
    assert len(lines) == 2 and all("left to max_steps" in line for line in lines)


def test_only_rank_zero_prints_progress(caplog):
    caplog.set_level(logging.INFO, logger="zoo.progress")
    callback, module = ProgressLog(every_n_steps=1, estimate_after_s=0.0), object()
    trainer = fake_trainer()
    trainer.is_global_zero = False
    callback.on_train_start(trainer, module)
    callback.on_train_epoch_start(trainer, module)
    for index in range(3):
        callback.on_train_batch_end(trainer, module, None, {"action": [0] * 8}, index)
    callback.on_train_epoch_end(trainer, module)
    assert caplog.messages == []
