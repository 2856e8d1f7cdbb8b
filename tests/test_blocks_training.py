"""Training the block policy from the recipe: every method runs, and an interrupted run
resumes to exactly the weights of an uninterrupted one."""

import importlib.util
from pathlib import Path

import lightning as L
import pytest
import torch
from safetensors.torch import load_file

from zoo.callbacks.epoch_metrics import read_epoch_metrics

RECIPE = Path(__file__).resolve().parent.parent / "recipes" / "blocks_policy.py"
TINY = [
    "data.source=procedural",
    "data.procedural_sizes={train: 6, dev: 2, test: 2}",
    "data.batch_size=8",
    "data.episodes_per_batch=4",
    "model.options.embedding_dim=8", "model.options.lstm_dim=8", "model.options.image_dim=8",
    "model.options.conv_channels=4", "model.options.block_embedding_dim=4", "model.options.direction_embedding_dim=4",
    "model.options.hidden_dim=8",
    "evaluation.gifs=0",
    "checkpoint.every_n_train_steps=2",
    "logger.kind=none",
    "trainer.max_epochs=2",
    "trainer.enable_progress_bar=false",
    "trainer.enable_model_summary=false",
]


def tiny(objective: str) -> list[str]:
    """The tiny recipe of ``objective`` (``model.name=blocks-OBJECTIVE`` picks its YAML); a bandit
    warms up for one supervised epoch."""
    warmup = ["start.warmup_epochs=1"] if objective in ("bandit", "reinforce") else []
    return [f"model.name=blocks-{objective}", *TINY, *warmup]


def recipe():
    spec = importlib.util.spec_from_file_location("blocks_policy_recipe", RECIPE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Crash(L.Callback):
    """Simulates a machine going away in the middle of an epoch."""

    def __init__(self, at_batch: int):
        self.at_batch, self.batches = at_batch, 0

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.batches += 1  # batches, not steps: a bandit batch makes one step per episode
        if self.batches == self.at_batch:
            raise KeyboardInterrupt  # Lightning stops without saving, as a kill would


def assert_same_curves(straight: Path, interrupted: Path) -> None:
    """The per-epoch metrics file tells the same story whatever the interruption."""
    curves = [read_epoch_metrics(run) for run in (straight, interrupted)]
    assert [row["epoch"] for row in curves[0]] == [row["epoch"] for row in curves[1]] == [0, 1]
    assert [row["tuning/mean_error"] for row in curves[0]] == [row["tuning/mean_error"] for row in curves[1]]
    assert all(row["train_seconds"] > 0 and row["dev/mean_error"] >= 0 for row in curves[1])


def weights(run_dir: Path) -> dict:
    return load_file(str(run_dir / "pretrained" / "model.safetensors"))


@pytest.mark.slow
@pytest.mark.parametrize("method", ["supervised", "bandit", "dqn"])
def test_interrupted_training_resumes_to_identical_weights(tmp_path, method):
    straight, interrupted = tmp_path / "straight", tmp_path / "interrupted"
    recipe().main([*tiny(method), f"run_dir={straight}"])
    with pytest.raises(SystemExit):  # Lightning turns the interrupt into a graceful exit
        recipe().main([*tiny(method), f"run_dir={interrupted}"], extra_callbacks=[Crash(at_batch=3)])
    assert (interrupted / "checkpoints" / "last.ckpt").is_file()
    assert not (interrupted / "pretrained").exists()
    recipe().main([*tiny(method), f"run_dir={interrupted}"])
    first, second = weights(straight), weights(interrupted)
    assert first.keys() == second.keys()
    for name in first:
        torch.testing.assert_close(first[name], second[name], rtol=0, atol=0, msg=name)
    assert_same_curves(straight, interrupted)


@pytest.mark.slow
def test_a_bandit_run_resumes_after_its_supervised_start_is_gone(tmp_path):
    """A fresh clone carries a run's last.ckpt, not the start it was initialised from."""
    start = tmp_path / "supervised"
    recipe().main([*tiny("supervised"), "trainer.max_epochs=1", f"run_dir={start}"])
    bandit = [*tiny("bandit"), f"start.init_from={start}/checkpoints/epoch000.ckpt"]
    straight, interrupted = tmp_path / "straight", tmp_path / "interrupted"
    recipe().main([*bandit, f"run_dir={straight}"])
    with pytest.raises(SystemExit):
        recipe().main([*bandit, f"run_dir={interrupted}"], extra_callbacks=[Crash(at_batch=3)])
    (start / "checkpoints" / "epoch000.ckpt").unlink()
    recipe().main([*bandit, f"run_dir={interrupted}"])
    first, second = weights(straight), weights(interrupted)
    for name in first:
        torch.testing.assert_close(first[name], second[name], rtol=0, atol=0, msg=name)


@pytest.mark.slow
def test_a_bandit_adds_the_previous_action_to_a_start_trained_without_it(tmp_path):
    start = tmp_path / "supervised"
    recipe().main([*tiny("supervised"), "model.options.use_previous_action=false", "trainer.max_epochs=1",
                   f"run_dir={start}"])
    bandit = [*tiny("bandit"), "trainer.max_epochs=1", f"start.init_from={start}/pretrained"]
    recipe().main([*bandit, f"run_dir={tmp_path / 'grown'}"])
    assert "previous_block.weight" in weights(tmp_path / "grown")
    with_input = tmp_path / "with-input"
    recipe().main([*tiny("supervised"), "trainer.max_epochs=1", f"run_dir={with_input}"])
    with pytest.raises(SystemExit, match="reads the previous action"):
        recipe().main([*tiny("bandit"), "model.options.use_previous_action=false",
                       f"start.init_from={with_input}/pretrained", f"run_dir={tmp_path / 'refused'}"])


@pytest.mark.parametrize(
    "overrides",
    [
        ["reinforce"],
        ["planner"],
        ["bandit", "model.options.reward=problem"],  # w/o F1 and F2
        ["bandit", "model.options.reward=f1"],  # w/o F2
        ["bandit", "model.options.reward=f2"],  # w/o F1
        ["bandit", "model.options.reward=distance"],  # with a distance reward
        ["bandit", "start.warmup_epochs=0"],  # w/o supervised init
        ["bandit", "model.options.use_previous_action=false"],  # w/o previous action
        ["bandit", "model.options.update_weighting=episodes"],  # the original's per-episode mean, pooled
        ["bandit", "model.options.reward_baseline=mean"],  # each update's mean reward subtracted
    ],
    ids=["reinforce", "planner", "problem-reward", "w/o-F2", "w/o-F1", "distance-reward", "w/o-supervised-init",
         "w/o-previous-action", "episode-weighting", "mean-baseline"],
)
@pytest.mark.slow
def test_every_method_and_ablation_of_table_2_trains_from_config(tmp_path, overrides):
    objective, *rest = overrides
    recipe().main([*tiny(objective), *rest, "trainer.max_epochs=1", f"run_dir={tmp_path}"])
    assert (tmp_path / "pretrained" / "model.safetensors").is_file()


@pytest.mark.slow
def test_the_oracle_planner_with_a_perfect_prediction_matches_the_demonstrations():
    """The planner part alone: told the true block and goal, it must do what the oracle does."""
    from zoo.blocks.evaluate import evaluate_policy
    from zoo.blocks.procedural import procedural_split
    from zoo.models.blocks import BlocksDemonstrations, BlocksPlanner

    split = procedural_split("dev", transitions=6)
    policy = BlocksPlanner(["<pad>", "<unk>"], embedding_dim=4, lstm_dim=4, image_dim=4, conv_channels=2,
                         block_embedding_dim=2, direction_embedding_dim=2, hidden_dim=4)
    truth = {example.instruction: example.transition for example in split.examples}

    def perfect(images, tokens, lengths, previous_action):
        transitions = [truth[text] for text in policy._current_instructions]
        block = torch.nn.functional.one_hot(torch.tensor([t.moved_block for t in transitions]), 20).float().log()
        goal = torch.tensor([t.goal[t.moved_block] for t in transitions], dtype=torch.float32)
        return block, goal

    original_encode = policy.encode_instructions

    def remember(texts):
        policy._current_instructions = texts
        return original_encode(texts)

    policy.encode_instructions = remember
    policy.predict_target = perfect
    planned = evaluate_policy(policy, split.examples, progress=False)
    oracle = evaluate_policy(BlocksDemonstrations(), split.examples, progress=False)
    assert planned["mean"] == pytest.approx(oracle["mean"])


@pytest.mark.slow
def test_two_process_ddp_bandit_training_keeps_the_ranks_in_step(tmp_path):
    """Two gloo processes: supervised warm-up then per-episode bandit updates on disjoint
    episodes; every step's gradients are averaged, so both ranks end with the same weights."""
    import json
    import os
    import subprocess
    import sys

    repo = Path(__file__).resolve().parent.parent
    run_dir = tmp_path / "ddp"
    overrides = [*tiny("bandit"), "trainer.max_epochs=1", f"run_dir={run_dir}", "trainer.devices=2",
                 "trainer.strategy=ddp", "trainer.accelerator=cpu", "threads=1",
                 "data.procedural_sizes={train: 8, dev: 2, test: 2}"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo), str(repo / "tests")])}
    completed = subprocess.run([sys.executable, str(repo / "tests" / "ddp_check.py"), "blocks", *overrides],
                               env=env, cwd=tmp_path, timeout=600, capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr[-3000:]
    ranks = [json.loads((run_dir / f"rank{r}.json").read_text()) for r in range(2)]
    assert ranks[0]["weights"] == ranks[1]["weights"]
    assert (run_dir / "pretrained" / "model.safetensors").is_file()
    from ddp_check import assert_no_unlabelled_duplicates

    assert_no_unlabelled_duplicates(completed.stdout + completed.stderr, result="exported best policy")


@pytest.mark.slow
def test_dqn_resumes_from_the_middle_of_an_epoch_to_identical_weights(tmp_path):
    """Six batches an epoch and a checkpoint after every step: the crash in the fifth batch
    resumes from the fourth, mid-epoch, with the replay memory and the target network."""
    mid_epoch = [*tiny("dqn"), "data.procedural_sizes={train: 12, dev: 2, test: 2}",
                 "checkpoint.every_n_train_steps=1", "loop.replay_size=24"]
    straight, interrupted = tmp_path / "straight", tmp_path / "interrupted"
    recipe().main([*mid_epoch, f"run_dir={straight}"])
    with pytest.raises(SystemExit):
        recipe().main([*mid_epoch, f"run_dir={interrupted}"], extra_callbacks=[Crash(at_batch=5)])
    saved = torch.load(interrupted / "checkpoints" / "last.ckpt", weights_only=True)
    assert saved["epoch"] == 0 and saved["global_step"] == 4  # 4 of the first epoch's 6 batches
    recipe().main([*mid_epoch, f"run_dir={interrupted}"])
    first, second = weights(straight), weights(interrupted)
    for name in first:
        torch.testing.assert_close(first[name], second[name], rtol=0, atol=0, msg=name)
    assert_same_curves(straight, interrupted)


def test_replay_memory_keeps_the_newest_rows_of_an_oversized_batch():
    from zoo.callbacks.dqn_loop import ReplayMemory

    def rows(start, count):
        values = torch.arange(start, start + count)
        return {"actions": values, "tokens": values[:, None], "rewards": values.double(), "stacks": values[:, None, None]}

    memory = ReplayMemory(capacity=4)
    memory.add(rows(0, 3))
    memory.add(rows(100, 10))  # more than the memory holds: only 106..109 survive
    assert memory.size == 4
    assert sorted(memory.store["actions"].tolist()) == [106, 107, 108, 109]
    assert torch.equal(memory.store["actions"], memory.store["tokens"][:, 0])  # fields stay aligned
    memory.add(rows(200, 1))  # the oldest of them goes next
    assert sorted(memory.store["actions"].tolist()) == [107, 108, 109, 200]


def test_replay_memory_takes_the_memory_its_estimate_says():
    """The recipe schema bounds loop.replay_size by ReplayMemory.bytes_per_transition: what each
    row of the store allocates, for the transitions DQNLoop collects (one-token instructions)."""
    from zoo.blocks.history import HISTORY
    from zoo.blocks.render import IMAGE_SIZE
    from zoo.callbacks.dqn_loop import ReplayMemory

    count, stack = 3, (3 * (HISTORY + 1), IMAGE_SIZE, IMAGE_SIZE)
    memory = ReplayMemory(capacity=10)
    memory.add({"actions": torch.zeros(count, dtype=torch.long), "previous": torch.zeros(count, dtype=torch.long),
                "rewards": torch.zeros(count, dtype=torch.float64), "done": torch.zeros(count, dtype=torch.bool),
                "stacks": torch.zeros(count, *stack, dtype=torch.uint8),
                "next_stacks": torch.zeros(count, *stack, dtype=torch.uint8),
                "tokens": torch.zeros(count, 1, dtype=torch.long), "lengths": torch.ones(count, dtype=torch.long)})
    assert sum(tensor.nbytes for tensor in memory.store.values()) == 10 * ReplayMemory.bytes_per_transition()


def saved_step(run_dir: Path) -> int:
    return torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=True)["global_step"]


@pytest.mark.slow
def test_trainer_max_steps_bounds_the_objective_and_not_its_warm_up(tmp_path):
    """``trainer.max_steps=2`` for a first look at a bandit: its supervised warm-up still trains
    its whole epoch (6 replay batches of the 6 training episodes), the bandit stops at step 2."""
    run_dir = tmp_path / "bandit"
    recipe().main([*tiny("bandit"), "trainer.max_steps=2", f"run_dir={run_dir}"])
    assert saved_step(run_dir / "warmup") == 6
    assert saved_step(run_dir) == 2


@pytest.mark.slow
def test_an_interrupted_warm_up_is_continued_and_says_so(tmp_path, monkeypatch, caplog):
    import logging

    from zoo.models.blocks import BlocksSupervised

    training_step = BlocksSupervised.training_step

    def lost_at_the_third_step(self, batch, batch_idx):
        if self.global_step == 2:
            raise KeyboardInterrupt  # as a lost machine: Lightning stops without saving
        return training_step(self, batch, batch_idx)

    run_dir = tmp_path / "bandit"
    bandit = [*tiny("bandit"), "checkpoint.every_n_train_steps=1", f"run_dir={run_dir}"]
    monkeypatch.setattr(BlocksSupervised, "training_step", lost_at_the_third_step)
    with pytest.raises(SystemExit):
        recipe().main(bandit)
    assert saved_step(run_dir / "warmup") == 2 and not (run_dir / "warmup" / "pretrained").exists()
    monkeypatch.setattr(BlocksSupervised, "training_step", training_step)
    caplog.set_level(logging.INFO, logger="zoo.resume")
    recipe().main(bandit)
    assert "the supervised warm-up stopped at step 2 of 6; continuing it" in caplog.messages
    assert saved_step(run_dir / "warmup") == 6 and (run_dir / "pretrained").is_dir()
