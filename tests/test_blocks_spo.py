"""Scheduled policy optimisation on the block policy: trials worse than the moving baseline
clone the expert's demonstration, the others are reinforced by PPO's clipped objective."""

import importlib.util
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from blocks_learners_support import TINY_POLICY, few_training_episodes, tiny_learner

from zoo.blocks.geometry import STOP
from zoo.callbacks.scheduled_loop import ScheduledLoop
from zoo.models.blocks import BlocksSpo
from zoo.models.blocks.losses import clipped_surrogate_loss

RECIPE = Path(__file__).resolve().parent.parent / "recipes" / "blocks_policy.py"


@pytest.fixture(scope="module")
def examples():
    return few_training_episodes()


@pytest.fixture()
def learner(examples):
    return tiny_learner(BlocksSpo, examples)


def test_inside_the_clip_range_the_surrogate_is_the_ratio_times_the_advantage():
    old = torch.log(torch.tensor([0.5, 0.2]))
    new = torch.log(torch.tensor([0.51, 0.198]))  # ratios 1.02 and 0.99, both within [0.95, 1.05]
    advantages = torch.tensor([1.0, -2.0])
    expected = -(1.02 * 1.0 + 0.99 * -2.0) / 2
    assert float(clipped_surrogate_loss(new, old, advantages, clip=0.05)) == pytest.approx(expected)


def test_past_the_clip_range_in_the_favoured_direction_the_gradient_stops():
    old = torch.log(torch.tensor([0.5, 0.5]))
    new = torch.log(torch.tensor([0.6, 0.4])).requires_grad_()  # ratio 1.2 with A > 0; 0.8 with A < 0
    clipped_surrogate_loss(new, old, torch.tensor([1.0, -1.0]), clip=0.05).backward()
    assert torch.equal(new.grad, torch.zeros(2))
    moved_against = torch.log(torch.tensor([0.4])).requires_grad_()  # ratio 0.8 with A > 0: still pulled up
    clipped_surrogate_loss(moved_against, old[:1], torch.tensor([1.0]), clip=0.05).backward()
    assert float(moved_against.grad) < 0


def test_the_first_trials_have_no_baseline_and_all_clone_the_experts_path(examples, learner):
    loop = ScheduledLoop(examples, seed=1)
    trials = loop.collect(learner, examples)
    assert bool(trials.worse.all())
    demonstrations = trials.demonstrations
    assert torch.equal(demonstrations.actions, demonstrations.labels)
    assert int((demonstrations.actions == STOP).sum()) == len(examples)  # the expert stops once per episode
    assert len(loop.errors) == len(examples) and loop.last_stats["cloned_share"] == 1.0


def test_later_trials_clone_exactly_when_worse_than_the_mean_of_the_window(examples, learner):
    loop = ScheduledLoop(examples, seed=2, window=5)
    loop.errors = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0][-5:]  # the window keeps the newest five: mean 4.0
    trials = loop.collect(learner, examples)
    final = loop.trials.runner.env.error().double()
    assert torch.equal(trials.worse, final > 4.0)
    cloned = int(trials.worse.sum())
    if cloned:
        assert int(trials.demonstrations.episodes.max()) + 1 == cloned
    else:
        assert trials.demonstrations is None
    assert loop.errors == final[-5:].tolist()  # the window now holds the newest five of these eight trials
    resumed = ScheduledLoop(examples, window=5)
    resumed.load_state_dict(loop.state_dict())
    assert resumed.baseline() == pytest.approx(float(final[-5:].mean()))


def test_bad_settings_are_refused_in_one_line(examples):
    with pytest.raises(ValueError, match="clip must lie in"):
        tiny_learner(BlocksSpo, examples, clip=1.5)
    with pytest.raises(ValueError, match="ppo_epochs"):
        tiny_learner(BlocksSpo, examples, ppo_epochs=0)
    with pytest.raises(ValueError, match="baseline window"):
        ScheduledLoop(examples, window=0)


@pytest.mark.slow
def test_cloning_steps_fit_the_demonstrations(examples, learner):
    trials = ScheduledLoop(examples, seed=0).collect(learner, examples)  # all cloned: no baseline yet
    optimizer = learner.configure_optimizers()
    learner.train()
    with torch.no_grad():
        first = float(learner.cloning_loss(trials.demonstrations))
    for _ in range(10):
        learner.update(trials, optimizer)
    with torch.no_grad():
        assert float(learner.cloning_loss(trials.demonstrations)) < 0.9 * first


@pytest.mark.slow
def test_ppo_steps_raise_the_likelihood_of_the_decisions_with_positive_advantage(examples, learner):
    loop = ScheduledLoop(examples, seed=4)
    trials = loop.collect(learner, examples)
    trials = replace(trials, worse=torch.zeros(len(examples), dtype=torch.bool), demonstrations=None)  # all reinforced
    rollout = trials.rollout
    rows = torch.arange(len(rollout.episodes))
    advantages = rollout.rewards - rollout.rewards.mean()
    from zoo.models.blocks.losses import action_log_prob

    with torch.no_grad():
        before = action_log_prob(*learner.rollout_heads(rollout, rows), rollout.actions)
    learner.update(trials, learner.configure_optimizers())
    with torch.no_grad():
        after = action_log_prob(*learner.rollout_heads(rollout, rows), rollout.actions)
    assert float((advantages * (after - before)).sum()) > 0


@pytest.mark.slow
def test_method_spo_trains_from_the_recipe(tmp_path):
    spec = importlib.util.spec_from_file_location("blocks_policy_recipe", RECIPE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tiny = ["data.source=procedural", "data.procedural_sizes={train: 6, dev: 2, test: 2}", "data.episodes_per_batch=3",
            *(f"model.options.{k}={v}" for k, v in TINY_POLICY.items()), "evaluation.gifs=0", "logger.kind=none",
            "trainer.max_epochs=1", "trainer.enable_progress_bar=false", "trainer.enable_model_summary=false",
            "model.name=blocks-spo", "model.options.ppo_epochs=2", f"run_dir={tmp_path}"]
    assert module.main(tiny) == 0
    trained = BlocksSpo.from_pretrained(tmp_path / "pretrained")
    assert type(trained) is BlocksSpo and trained.objective == "spo"
    assert (tmp_path / "checkpoints" / "last.ckpt").is_file()


@pytest.mark.slow
def test_a_step_on_mixed_trials_follows_both_terms_weighted_by_their_share(examples):
    """Half cloned, half reinforced: one plain gradient step moves the weights by the sum of
    the PPO gradient weighted 1/2 and the cloning gradient weighted 1/2."""
    from zoo.models.blocks.losses import action_log_prob

    learner = tiny_learner(BlocksSpo, examples, ppo_epochs=1, gradient_clip_val=None, entropy_coefficient=0.0)
    loop = ScheduledLoop(examples, seed=6)
    trials = loop.collect(learner, examples)
    worse = torch.arange(len(examples)) % 2 == 0
    trials = replace(trials, worse=worse, demonstrations=loop.expert.play(learner, [e for e, w in zip(examples, worse) if w]))
    rollout = trials.rollout
    rows = (~worse)[rollout.episodes].nonzero().squeeze(1)
    advantages = rollout.rewards[rows] - rollout.rewards[rows].mean()

    def gradient(loss_of) -> list[torch.Tensor]:
        learner.zero_grad()
        loss_of().backward()
        return [p.grad.clone() if p.grad is not None else torch.zeros_like(p) for p in learner.parameters()]

    with torch.no_grad():
        old = action_log_prob(*learner.rollout_heads(rollout, rows), rollout.actions[rows])
    ppo = gradient(lambda: clipped_surrogate_loss(
        action_log_prob(*learner.rollout_heads(rollout, rows), rollout.actions[rows]), old, advantages, 0.05))
    clone = gradient(lambda: learner.cloning_loss(trials.demonstrations))
    before = [p.detach().clone() for p in learner.parameters()]
    learner.update(trials, torch.optim.SGD(learner.parameters(), lr=1.0))
    for start, now, g_ppo, g_clone in zip(before, learner.parameters(), ppo, clone):
        assert torch.allclose(start - now.detach(), 0.5 * g_ppo + 0.5 * g_clone, atol=1e-5)
