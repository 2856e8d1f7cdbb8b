"""DAgger on the block policy: rollouts mix the expert and the policy, every state is labelled
with the expert's action, β decays as configured, and the learner fits the labels."""

import importlib.util
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from blocks_learners_support import TINY_POLICY, few_training_episodes, tiny_learner

from zoo.blocks.board import BoardBatch
from zoo.blocks.env import BlocksEnv
from zoo.blocks.expert import BlocksExpert
from zoo.blocks.geometry import STOP
from zoo.callbacks.expert_loop import ExpertLoop, ExpertReplay
from zoo.models.blocks import BlocksDagger

RECIPE = Path(__file__).resolve().parent.parent / "recipes" / "blocks_policy.py"


@pytest.fixture(scope="module")
def examples():
    return few_training_episodes()


@pytest.fixture()
def learner(examples):
    return tiny_learner(BlocksDagger, examples)


def replay_labels(examples, rollout) -> torch.Tensor:
    """The expert's action at every decision of a rollout, found by replaying its actions."""
    boards = BoardBatch.from_transitions([e.transition for e in examples])
    env, expert = BlocksEnv(), BlocksExpert(boards)
    env.reset(boards)
    labels = torch.empty_like(rollout.labels)
    for step in range(int(rollout.steps.max()) + 1):
        rows = (rollout.steps == step).nonzero().squeeze(1)
        episodes = rollout.episodes[rows]
        labels[rows] = expert.act(env.positions[episodes], env.moves_taken[episodes], episodes)
        actions = torch.full((len(examples),), STOP)
        actions[episodes] = rollout.actions[rows]
        env.step(actions)
    return labels


def test_every_visited_state_is_labelled_with_the_experts_action(examples, learner):
    loop = ExpertLoop(examples, seed=1, beta_start=0.5, beta_decay=1.0)
    rollout = loop.play(learner, examples)
    assert torch.equal(rollout.labels, replay_labels(examples, rollout))
    by_expert = rollout.expert_acted
    assert torch.equal(rollout.actions[by_expert], rollout.labels[by_expert])
    assert 0 < by_expert.float().mean() < 1  # both the expert and the policy acted


def test_with_beta_one_the_rollout_is_the_experts_path(examples, learner):
    rollout = ExpertLoop(examples, beta_start=1.0).play(learner, examples)
    assert bool(rollout.expert_acted.all())
    assert torch.equal(rollout.actions, rollout.labels)
    stops = rollout.actions == STOP
    assert int(stops.sum()) == len(examples)  # each episode ends with the expert's one STOP


def test_beta_decays_as_configured_from_rollout_to_rollout(examples, learner):
    loop = ExpertLoop(examples, beta_start=1.0, beta_decay=0.5, beta_end=0.2)
    seen = []
    for _ in range(4):
        loop.play(learner, examples[:2])
        seen.append(loop.last_stats["beta"])
    assert seen == [1.0, 0.5, 0.25, 0.2]
    assert loop.state_dict() == {"rollouts": 4}
    resumed = ExpertLoop(examples, beta_start=1.0, beta_decay=0.5, beta_end=0.2)
    resumed.load_state_dict(loop.state_dict())
    assert resumed.beta() == 0.2
    with pytest.raises(ValueError, match="beta_decay"):
        ExpertLoop(examples, beta_decay=0.0)


def test_the_replay_stores_each_decision_with_its_history_window(examples, learner):
    rollout = ExpertLoop(examples, seed=2, beta_start=0.7, beta_decay=1.0).play(learner, examples)
    replay = ExpertReplay(capacity=1000)
    replay.add(rollout)
    order = torch.argsort(rollout.episodes * 100 + rollout.steps)
    steps, episodes = rollout.steps[order], rollout.episodes[order]
    assert torch.equal(replay.frames[: len(order)], rollout.frames[steps, episodes])
    assert torch.equal(replay.labels[: len(order)], rollout.labels[order])
    sample = replay.sample(64, torch.Generator().manual_seed(0))
    newest = sample.index[:, -1]
    for row, slot in enumerate(newest.tolist()):
        for back in range(1, 5):  # the frames before it in its own episode, zeros before its start
            expected = slot - back if back <= int(replay.steps[slot]) else -1
            assert int(sample.index[row, -1 - back]) == expected


def test_the_replay_keeps_only_the_newest_decisions(examples, learner):
    loop = ExpertLoop(examples, seed=5, beta_start=0.5, beta_decay=1.0)
    replay = ExpertReplay(capacity=20)
    labels = []
    for _ in range(3):
        rollout = loop.play(learner, examples)
        replay.add(rollout)
        labels.append(rollout.labels[torch.argsort(rollout.episodes * 100 + rollout.steps)])
    newest = torch.cat(labels)[-20:]
    assert len(replay) == 20 and replay.total == len(torch.cat(labels))
    assert torch.equal(replay.labels.roll(-(replay.total % 20)), newest)
    sample = replay.sample(200, torch.Generator().manual_seed(0))
    # every window drawn is whole: its slots hold the consecutive steps of one episode
    for window in sample.index.tolist():
        steps = [int(replay.steps[slot]) for slot in window if slot >= 0]
        assert steps == list(range(steps[-1] - len(steps) + 1, steps[-1] + 1))


@pytest.mark.slow
def test_a_few_dagger_steps_fit_the_labels(examples, learner):
    loop = ExpertLoop(examples, seed=0, beta_start=1.0, replay_size=500, batch_size=16, updates_per_rollout=2)
    labels = loop.collect(learner, examples)
    assert len(labels.minibatches) == 2 and len(labels.minibatches[0].labels) == 16
    optimizer = learner.configure_optimizers()
    learner.train()
    first = float(learner.update(labels, optimizer))
    for _ in range(15):
        last = float(learner.update(labels, optimizer))
    assert last < 0.8 * first


@pytest.mark.slow
def test_method_dagger_trains_from_the_recipe(tmp_path):
    spec = importlib.util.spec_from_file_location("blocks_policy_recipe", RECIPE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tiny = ["data.source=procedural", "data.procedural_sizes={train: 6, dev: 2, test: 2}", "data.episodes_per_batch=4",
            *(f"model.options.{k}={v}" for k, v in TINY_POLICY.items()), "evaluation.gifs=0", "logger.kind=none",
            "trainer.max_epochs=1", "trainer.enable_progress_bar=false", "trainer.enable_model_summary=false",
            "model.name=blocks-dagger", "loop.batch_size=8", "model.options.beta_decay=0.5", f"run_dir={tmp_path}"]
    assert module.main(tiny) == 0
    trained = BlocksDagger.from_pretrained(tmp_path / "pretrained")
    assert type(trained) is BlocksDagger and trained.objective == "dagger"
    assert (tmp_path / "checkpoints" / "last.ckpt").is_file()


def test_a_stop_weight_counts_each_stop_label_that_many_times():
    """Weight 3 on STOP is the plain mean over the labels with each STOP repeated three times."""
    from zoo.models.blocks import losses

    torch.manual_seed(0)
    block, direction = torch.randn(4, 20).log_softmax(-1), torch.randn(4, 5).log_softmax(-1)
    labels = torch.tensor([STOP, 7, 12, STOP])
    repeated = torch.tensor([0, 0, 0, 1, 2, 3, 3, 3])
    expected = losses.supervised_loss(block[repeated], direction[repeated], labels[repeated])
    assert torch.isclose(losses.supervised_loss(block, direction, labels, stop_weight=3.0), expected)
    assert torch.isclose(losses.supervised_loss(block, direction, labels, stop_weight=1.0),
                         losses.supervised_loss(block, direction, labels))
    with pytest.raises(ValueError, match="stop_weight"):
        BlocksDagger(["<pad>", "<unk>"], stop_weight=0.0, **TINY_POLICY)


def test_the_replay_takes_the_memory_its_estimate_says(examples, learner):
    """The recipe schema bounds loop.replay_size by ExpertReplay.bytes_per_decision: that is
    what each slot allocates (one-token instructions here; longer ones widen every row)."""
    rollout = ExpertLoop(examples, seed=2).play(learner, examples)
    rollout = replace(rollout, tokens=rollout.tokens[:, :1], lengths=torch.ones_like(rollout.lengths))
    replay = ExpertReplay(capacity=50)
    replay.add(rollout)
    stored = (replay.frames, replay.frame_sums, replay.steps, replay.previous, replay.labels, replay.lengths,
              replay.tokens)
    assert sum(tensor.nbytes for tensor in stored) == 50 * ExpertReplay.bytes_per_decision()
