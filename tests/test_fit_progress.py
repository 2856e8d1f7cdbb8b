"""A long run says what it costs within seconds, and leaves progress lines in a log file."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

import zoo.callbacks.fit_progress as fit_progress
from zoo.callbacks.fit_estimate import validations_left
from zoo.callbacks.fit_progress import ProgressLog
from zoo.threads import use_threads


def fake_trainer(batches: int = 100, epochs: int = 3, epoch: int = 0, val_batches: int = 0):
    return SimpleNamespace(num_training_batches=batches, max_epochs=epochs, current_epoch=epoch,
                           progress_bar_metrics={"train/loss": 1.5}, callback_metrics={}, global_step=0,
                           num_val_batches=[val_batches], val_check_batch=batches, check_val_every_n_epoch=1,
                           sanity_checking=False)


@pytest.fixture
def clock(monkeypatch):
    """The callback's clock, moved by hand: ``clock.now = 12.5``."""
    fake = SimpleNamespace(now=0.0)
    monkeypatch.setattr(fit_progress, "time", SimpleNamespace(perf_counter=lambda: fake.now))
    return fake


def train(callback, trainer, clock, batches, seconds_each: float, start: int = 0) -> None:
    """``batches`` training batches of ``seconds_each`` from batch ``start`` of the current epoch."""
    for index in range(start, start + batches):
        clock.now += seconds_each
        trainer.global_step += 1
        callback.on_train_batch_end(trainer, object(), None, {"action": [0] * 8}, index)


def validate(callback, trainer, clock, seconds: float) -> None:
    callback.on_validation_start(trainer, object())
    clock.now += seconds
    callback.on_validation_end(trainer, object())


def test_the_plan_and_the_cost_of_the_whole_run_come_first(caplog):
    caplog.set_level(logging.INFO, logger="zoo.progress")
    use_threads("small")
    callback, trainer, module = ProgressLog(every_n_steps=1000, estimate_after_s=0.0, lines=False), fake_trainer(), object()
    callback.on_train_start(trainer, module)
    callback.on_train_epoch_start(trainer, module)
    for index in range(3):
        callback.on_train_batch_end(trainer, module, None, {"action": [0] * 8}, index)
    plan, estimate = caplog.messages  # the estimate at the first batch: 99 + 2 × 100 steps left
    assert plan == ("training object: 100 batches per epoch, 3 epoch(s) to go (epoch 0 of 3), "
                    "on 1 thread (small operations; threads=N to change)")
    assert "the 299 training steps left at" in estimate and "rerun the same command to resume" in estimate


def test_the_first_estimate_comes_seconds_into_training_and_counts_validation_and_the_start_up(caplog, clock):
    """A 5 s start-up, then batches of 0.5 s: at 10 s, 289 batches are left (145 s), and three
    validation passes of 20 batches, guessed at a training batch's time each (3 × 10 s)."""
    caplog.set_level(logging.INFO, logger="zoo.progress")
    callback, trainer = ProgressLog(estimate_after_s=10.0, lines=False), fake_trainer(val_batches=20)
    callback.on_train_start(trainer, object())
    callback.on_train_epoch_start(trainer, object())
    train(callback, trainer, clock, 1, seconds_each=5.0)
    train(callback, trainer, clock, 9, seconds_each=0.5, start=1)
    assert len(caplog.messages) == 1  # 9.5 s: no estimate yet
    train(callback, trainer, clock, 1, seconds_each=0.5, start=10)
    said = callback._estimated
    assert (said.batches, said.rate, said.passes, said.each) == (289, 2.0, 3, 10.0)
    assert said.total == pytest.approx(10.0 + 289 / 2.0 + 30.0)
    assert caplog.messages[-1].startswith("training ends in about 2.9 min, 3.1 min after it started: the 289 training "
                                          "steps left at 2.00 batches/s, 3 validation passes of ~10 s each "
                                          "(guessed until one is timed); stop with Ctrl-C or SIGTERM")


@pytest.mark.parametrize("validation_seconds, revised", [(60.0, True), (12.0, False)])
def test_the_estimate_is_said_again_when_the_first_validation_moves_it_by_more_than_a_fifth(
        caplog, clock, validation_seconds, revised):
    caplog.set_level(logging.INFO, logger="zoo.progress")
    callback, trainer = ProgressLog(estimate_after_s=0.0, lines=False), fake_trainer(val_batches=20)
    callback.on_train_start(trainer, object())
    callback.on_train_epoch_start(trainer, object())
    train(callback, trainer, clock, 100, seconds_each=0.5)
    first = callback._estimated.total  # said at the first batch: 0.5 s + 299 × 0.5 s + 3 × 10 s
    assert first == pytest.approx(180.0)
    validate(callback, trainer, clock, validation_seconds)
    if revised:  # 60 s a pass: 50 s of training and 100 s of validation at the end of epoch 0, 100 + 120 to go
        assert caplog.messages[-1].startswith("revised, the first validation took 1.0 min: training ends in about 3.7 min")
        assert callback._estimated.total == pytest.approx(50.0 + 60.0 + 100.0 + 2 * 60.0)
    else:
        assert callback._estimated.total == first and caplog.messages[-1].startswith("training ends")
    caplog.clear()
    validate(callback, trainer, clock, 500.0)  # later passes change nothing said
    assert caplog.messages == []


def test_a_first_validation_at_the_end_of_training_revises_nothing(caplog, clock):
    caplog.set_level(logging.INFO, logger="zoo.progress")
    callback, trainer = ProgressLog(estimate_after_s=0.0, lines=False), fake_trainer(epochs=1, val_batches=20)
    callback.on_train_start(trainer, object())
    callback.on_train_epoch_start(trainer, object())
    train(callback, trainer, clock, 100, seconds_each=0.5)
    caplog.clear()
    validate(callback, trainer, clock, 600.0)
    assert caplog.messages == []


def test_the_end_says_how_long_training_took_beside_the_estimate(caplog, clock):
    caplog.set_level(logging.INFO, logger="zoo.progress")
    callback, trainer = ProgressLog(estimate_after_s=0.0, lines=False), fake_trainer(batches=10, epochs=1)
    callback.on_train_start(trainer, object())
    callback.on_train_epoch_start(trainer, object())
    train(callback, trainer, clock, 10, seconds_each=10.0)
    callback.on_train_end(trainer, object())
    assert caplog.messages[-1] == "training took 1.7 min (estimated 1.7 min)"


def test_max_time_caps_the_estimate_with_one_validation_after_it(clock, monkeypatch):
    monkeypatch.setattr(fit_progress, "time_remaining", lambda trainer: 30.0)
    callback, trainer = ProgressLog(estimate_after_s=0.0, lines=False), fake_trainer(val_batches=4)
    callback.on_train_start(trainer, object())
    callback.on_train_epoch_start(trainer, object())
    train(callback, trainer, clock, 2, seconds_each=1.0)
    said = callback._estimated
    assert said.capped and said.total == pytest.approx(1.0 + 30.0 + 4.0)
    assert "trainer.max_time stops it then" in str(said)


def schedule(batches: int = 100, every: int | None = None, every_epochs: int | None = 1, val_batches: int = 5):
    return SimpleNamespace(num_val_batches=[val_batches], val_check_batch=every or batches,
                           check_val_every_n_epoch=every_epochs)


def test_validation_passes_follow_lightnings_schedule():
    assert validations_left(schedule(), done=10, left=290, per_epoch=100) == 3  # the end of each epoch
    assert validations_left(schedule(), done=100, left=200, per_epoch=100) == 2  # epoch 0's is behind
    assert validations_left(schedule(every=25), done=10, left=290, per_epoch=100) == 12  # val_check_interval=0.25
    assert validations_left(schedule(every_epochs=2), done=10, left=390, per_epoch=100) == 2  # epochs 1 and 3
    assert validations_left(schedule(every=150, every_epochs=None), done=0, left=400, per_epoch=100) == 2  # across epochs
    assert validations_left(schedule(val_batches=0), done=0, left=400, per_epoch=100) == 0  # no validation set
    # trainer.max_steps ends mid-epoch: Lightning validates once more before it stops (ValidateAtMaxSteps)
    assert validations_left(schedule(), done=0, left=150, per_epoch=100, ends_early=True) == 2
    assert validations_left(schedule(), done=0, left=200, per_epoch=100, ends_early=True) == 2


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
    plan, estimate = caplog.messages  # at the first batch
    assert "20 epoch(s) to go, or until step 20 (trainer.max_steps; 20 to go) (epoch 0 of 20), on " in plan
    assert "the 19 training steps left at" in estimate


def test_a_batch_of_several_optimizer_steps_counts_as_one_batch_towards_max_steps(caplog):
    """A bandit batch of 4 episodes makes 4 optimizer steps: 44 steps to go are 11 batches."""
    caplog.set_level(logging.INFO, logger="zoo.progress")
    callback, module = ProgressLog(every_n_steps=1000, estimate_after_s=0.0, lines=False), object()
    trainer = fake_trainer(batches=1000, epochs=5)
    trainer.max_steps, trainer.global_step = 48, 0
    callback.on_train_start(trainer, module)
    callback.on_train_epoch_start(trainer, module)
    for index in range(2):  # steps 4 and 8 after the two batches
        trainer.global_step += 4
        callback.on_train_batch_end(trainer, module, None, {"episodes": [0] * 4}, index)
    plan, estimate = caplog.messages  # at the first batch: 44 steps to go are 11 batches
    assert "the 11 training steps left at" in estimate


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
