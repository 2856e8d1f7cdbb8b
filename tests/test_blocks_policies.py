"""The Blocks policies split by objective: one class per objective over one network, the
released checkpoints (whose configs name the former ``BlockPolicy``) acting exactly as before,
and a new objective being one class plus its registration."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from zoo.blocks.procedural import procedural_split
from zoo.blocks.rollout import EpisodeRunner
from zoo.grounded import Grounded
from zoo.models.blocks import (
    BlockPolicy,
    BlocksBandit,
    BlocksDQN,
    BlocksEnsemble,
    BlocksPlanner,
    BlocksPolicy,
    BlocksReinforce,
    BlocksSupervised,
    objective_class,
    register_objective,
)
from zoo.models.blocks.network import NETWORK_OPTIONS
from zoo.models.blocks.policy import load_training_checkpoint
from zoo.factory import create_model, list_models
from zoo.weights import load_weights

RELEASES = ("blocks-supervised", "blocks-bandit", "blocks-bandit-ensemble")
REFERENCE = Path(__file__).parent / "data" / "blocks_release_probabilities.safetensors"
"""The releases' action probabilities [decision, episode, 81] on three procedural dev boards
(fallback logos), computed by the single ``BlockPolicy`` class before the split."""
BANDIT_SETTINGS = ("entropy_coefficient", "loss_form", "episodes_per_update", "update_weighting", "reward_baseline",
                   "gradient_clip_val", "gradient_clip_algorithm")
TINY = dict(embedding_dim=8, lstm_dim=8, image_dim=8, conv_channels=4, block_embedding_dim=4,
            direction_embedding_dim=4, hidden_dim=8)


def release_probabilities(policy) -> torch.Tensor:
    """What the reference holds: two decisions of three procedural episodes, fixed moves between."""
    runner = EpisodeRunner()
    runner.start(procedural_split("dev", transitions=3).examples[:3], images=True, demonstrations=False)
    rows = []
    with torch.no_grad():
        for actions in (torch.tensor([1, 22, 80]), torch.tensor([6, 22, 3])):
            rows.append(policy.action_probabilities(runner.observe()).clone())
            runner.step(actions)
    return torch.stack(rows)


@pytest.fixture
def fallback_logos(monkeypatch, tmp_path):
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path / "no-data"))  # the renderer's built-in logos


@pytest.mark.parametrize("name", RELEASES)
def test_a_release_acts_as_the_single_policy_class_did_before_the_split(name, fallback_logos):
    loaded = Grounded.from_pretrained(name)
    assert isinstance(loaded, (BlocksSupervised, BlocksBandit, BlocksEnsemble))
    # atol 1e-6, not equality: convolutions may round differently on another CPU
    torch.testing.assert_close(release_probabilities(loaded), load_file(REFERENCE)[name], rtol=0, atol=1e-6)


@pytest.mark.parametrize("name", ["blocks-supervised", "blocks-bandit"])
def test_a_former_config_loads_as_the_class_its_objective_names(name, fallback_logos):
    from zoo.hub import fetch_pretrained

    directory = fetch_pretrained(name, progress=False)
    former = json.loads((directory / "config.json").read_text())
    assert former["model_class"] == "BlockPolicy"
    objective = former["config"]["objective"]
    kept = [*NETWORK_OPTIONS, "learning_rate", *(BANDIT_SETTINGS if objective == "bandit" else ())]
    direct = objective_class(objective)(**{k: former["config"][k] for k in kept if k in former["config"]})
    load_weights(direct, directory)
    through_the_former_name = Grounded.from_pretrained(name)
    assert type(through_the_former_name) is type(direct)
    assert torch.equal(release_probabilities(direct.eval()), release_probabilities(through_the_former_name))


def test_former_options_pick_the_objective_and_keep_only_its_settings():
    words = ["<pad>", "<unk>", "move"]
    assert type(BlockPolicy(words, **TINY)) is BlocksSupervised
    reinforce = BlockPolicy(words, **TINY, objective="reinforce", discount=0.5, episodes_per_update=4)
    assert type(reinforce) is BlocksReinforce and reinforce.hparams.episodes_per_update == 4
    assert "discount" not in reinforce.hparams and "objective" not in reinforce.hparams
    dqn = BlockPolicy(words, **TINY, objective="dqn", head="q", discount=0.5, entropy_coefficient=0.3)
    assert type(dqn) is BlocksDQN and dqn.hparams.discount == 0.5 and "entropy_coefficient" not in dqn.hparams
    assert type(BlockPolicy(words, **TINY, objective="planner", head="target")) is BlocksPlanner
    with pytest.raises(ValueError, match="needs its own head"):
        BlockPolicy(words, **TINY, objective="dqn")


def test_a_former_training_checkpoint_loads_as_todays_class(tmp_path):
    policy = BlocksBandit(["<pad>", "<unk>", "move"], **TINY, episodes_per_update=2)
    former = {**policy.hparams, "objective": "bandit", "head": "factored", "discount": 0.9}
    torch.save({"state_dict": policy.state_dict(), "hyper_parameters": former}, tmp_path / "former.ckpt")
    loaded = load_training_checkpoint(tmp_path / "former.ckpt")
    assert type(loaded) is BlocksBandit and loaded.hparams.episodes_per_update == 2
    for name, tensor in policy.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], tensor), name


def test_reinforce_is_the_bandit_weighted_by_the_return_instead_of_the_reward():
    rollout = {"rewards": torch.tensor([1.0, -1.0, 2.0]), "returns": torch.tensor([2.0, 1.0, 2.0])}
    rows = torch.tensor([0, 2])
    words = ["<pad>", "<unk>"]
    assert torch.equal(BlocksBandit(words, **TINY).rollout_targets(rollout, rows), torch.tensor([1.0, 2.0]))
    assert torch.equal(BlocksReinforce(words, **TINY).rollout_targets(rollout, rows), torch.tensor([2.0, 2.0]))
    assert set(BlocksReinforce.__dict__) - {"__module__", "__doc__", "__qualname__", "objective"} == {"rollout_targets"}


def test_a_supervised_start_becomes_a_bandit_with_the_same_weights():
    start = BlocksSupervised(["<pad>", "<unk>", "move"], **TINY)
    bandit = start.to_objective(BlocksBandit, learning_rate=0.5, episodes_per_update=3)
    assert type(bandit) is BlocksBandit and bandit.hparams.learning_rate == 0.5
    assert all(torch.equal(bandit.state_dict()[k], v) for k, v in start.state_dict().items())


@pytest.fixture
def scratch_registries(monkeypatch):
    """Registrations made by a test vanish after it."""
    import zoo.models.blocks.policy as policy_module
    import zoo.registry as registry

    list_models()  # every model family registered first
    monkeypatch.setattr(policy_module, "_OBJECTIVES", dict(policy_module._OBJECTIVES))
    monkeypatch.setattr(registry, "_MODELS", dict(registry._MODELS))
    monkeypatch.setattr(registry, "_CLASSES", dict(registry._CLASSES))


def test_a_new_objective_is_one_class_and_its_registration(scratch_registries, tmp_path):
    @register_objective("stop-averse", "supervised, with the demonstrations' STOPs down-weighted")
    class BlocksStopAverse(BlocksSupervised):
        """Supervised learning that counts a STOP decision half."""

        def training_step(self, batch: dict, batch_idx: int) -> torch.Tensor:
            block, direction = self(batch["images"], batch["tokens"], batch["lengths"], batch["previous_action"])
            weights = torch.where(batch["action"] == 80, 0.5, 1.0)
            log_p = self.joint_log_probs(block, direction).gather(1, batch["action"][:, None]).squeeze(1)
            return -(weights * log_p).mean()

    assert objective_class("stop-averse") is BlocksStopAverse and "blocks-stop-averse" in list_models()
    policy = create_model("blocks-stop-averse", vocabulary=["<pad>", "<unk>", "move"], **TINY)
    batch = {"images": torch.rand(2, 15, 120, 120), "tokens": torch.tensor([[2], [2]]),
             "lengths": torch.tensor([1, 1]), "previous_action": torch.tensor([-1, 3]), "action": torch.tensor([80, 5])}
    policy.training_step(batch, 0).backward()
    assert policy.direction_head.weight.grad.abs().sum() > 0
    loaded = Grounded.from_pretrained(policy.save_pretrained(tmp_path / "stop-averse"))
    assert type(loaded) is BlocksStopAverse


def test_every_objective_is_listed_beside_the_ensemble():
    assert {"blocks-supervised", "blocks-bandit", "blocks-reinforce", "blocks-dqn", "blocks-planner",
            "blocks-ensemble"} <= set(list_models("blocks-*"))
    assert all(issubclass(objective_class(name), BlocksPolicy)
               for name in ("supervised", "bandit", "reinforce", "dqn", "planner"))
