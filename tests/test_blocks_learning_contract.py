"""The learning contract of the Blocks objectives that learn from experience: a training loop's
``collect(policy, examples)`` returns the objective's typed experience record, the objective's
``update(experience, optimizer)`` learns from it, and inside a Trainer the loop hands the record
over with ``set_experience``: ``training_step`` reads no experience from the batch."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from blocks_learners_support import few_training_episodes, tiny_learner

import zoo.callbacks.objective_loops as objective_loops
from zoo.callbacks.contextual_bandit import ContextualBanditLoop
from zoo.callbacks.dqn_loop import DQNLoop
from zoo.callbacks.expert_loop import ExpertLoop
from zoo.callbacks.scheduled_loop import ScheduledLoop
from zoo.models.blocks import (BlocksBandit, BlocksDagger, BlocksDQN, BlocksReinforce, BlocksSpo, list_objectives,
                               objective_class)
from zoo.models.blocks.experience import ExpertLabels, SampledRollout, ScheduledTrials, Transitions

LEARNERS = {
    "bandit": (BlocksBandit, lambda examples: ContextualBanditLoop(examples, seed=1, horizon=10), SampledRollout),
    "reinforce": (BlocksReinforce, lambda examples: ContextualBanditLoop(examples, seed=1, horizon=10), SampledRollout),
    "dagger": (BlocksDagger, lambda examples: ExpertLoop(examples, seed=1, horizon=10, beta_start=0.5, batch_size=8), ExpertLabels),
    "spo": (BlocksSpo, lambda examples: ScheduledLoop(examples, seed=1, horizon=10), ScheduledTrials),
    "dqn": (BlocksDQN, lambda examples: DQNLoop(examples, seed=1, horizon=10, batch_size=8), Transitions),
}
"""Each objective that collects experience, the loop it trains with and the record it learns from."""


class RecordingBatch(dict):
    """A batch that remembers every key read from it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.read: set[str] = set()

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self.read.add(key)
        return super().get(key, default)

    def __contains__(self, key):
        self.read.add(key)
        return super().__contains__(key)


@pytest.fixture(scope="module")
def examples():
    return few_training_episodes()[:4]


def weights(policy) -> list[torch.Tensor]:
    return [p.detach().clone() for p in policy.parameters()]


def test_every_objective_with_a_training_loop_is_checked_here():
    with_loops = {name for name in list_objectives() if objective_class(name).training_loop is not None}
    assert with_loops == set(LEARNERS)
    for name, (objective, _, kind) in LEARNERS.items():
        assert objective_class(name) is objective and objective.experience_type is kind


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_collect_gives_the_typed_experience_and_update_learns_from_it(name, examples):
    objective, make_loop, kind = LEARNERS[name]
    policy = tiny_learner(objective, examples)
    experience = make_loop(examples).collect(policy, examples)
    assert type(experience) is kind
    before = weights(policy)
    policy.train()
    loss = policy.update(experience, torch.optim.SGD(policy.parameters(), lr=0.1))
    assert loss.dim() == 0 and bool(torch.isfinite(loss))
    assert any(not torch.equal(old, new) for old, new in zip(before, policy.parameters()))


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_training_step_takes_the_handed_over_experience_and_reads_only_the_episodes(name, examples):
    objective, make_loop, _ = LEARNERS[name]
    policy = tiny_learner(objective, examples)
    optimizer = torch.optim.SGD(policy.parameters(), lr=0.1)
    policy.optimizers = lambda: optimizer  # what a Trainer supplies
    policy.manual_backward = lambda loss: loss.backward()
    policy.log = lambda *args, **kwargs: None
    batch = RecordingBatch(episodes=torch.arange(len(examples)))
    policy.set_experience(make_loop(examples).collect(policy, examples))
    policy.train()
    loss = policy.training_step(batch, 0)
    assert bool(torch.isfinite(loss))
    assert batch.read == {"episodes"}
    with pytest.raises(RuntimeError, match=f"{objective.__name__} learns from a {objective.experience_type.__name__}"):
        policy.training_step(batch, 1)  # the record is taken once: the next batch needs its own


def test_the_experience_records_are_frozen(examples):
    rollout = ContextualBanditLoop(examples, seed=1).collect(tiny_learner(BlocksBandit, examples), examples)
    with pytest.raises(AttributeError):
        rollout.rewards = torch.zeros_like(rollout.rewards)


def test_no_callback_reads_model_settings():
    """What a loop needs comes from its constructor: the recipe's loop section, or what the objective
    hands over through a method of its own (its reward, its beta schedule, its baseline window)."""
    callbacks = Path(objective_loops.__file__).parent
    modules = sorted(callbacks.glob("*.py"))
    assert {"contextual_bandit.py", "objective_loops.py", "expert_loop.py"} <= {path.name for path in modules}
    for path in modules:
        assert "hparams" not in path.read_text(encoding="utf-8"), path.name
