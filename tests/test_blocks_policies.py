"""The Blocks policies split by objective: one class per objective over one network and its one
config (``BlocksNetworkConfig``), the released checkpoints (whose configs name their objective's
class) acting exactly as before, and a new objective being one class plus its registration."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from safetensors.torch import load_file

from zoo.blocks.procedural import procedural_split
from zoo.blocks.rollout import EpisodeRunner
from zoo.grounded import Grounded
from zoo.models.blocks import (
    BlocksBandit,
    BlocksDagger,
    BlocksDQN,
    BlocksEnsemble,
    BlocksNetworkConfig,
    BlocksPlanner,
    BlocksPolicy,
    BlocksReinforce,
    BlocksSpo,
    BlocksSupervised,
    objective_class,
    register_objective,
)
from zoo.models.blocks.goal import BlocksGoalPredictor
from zoo.models.blocks.network import NETWORK_OPTIONS
from zoo.models.blocks.policy import RETIRED_CLASS_NAMES, load_training_checkpoint
from zoo.factory import create_model, list_models
from zoo.hub import fetch_pretrained, list_pretrained, pretrained_entry

RELEASES = ("blocks-supervised", "blocks-bandit", "blocks-bandit-ensemble")
REFERENCE = Path(__file__).parent / "data" / "blocks_release_probabilities.safetensors"
"""The releases' action probabilities [decision, episode, 81] on three procedural dev boards
(fallback logos), computed before the policies were split by objective."""
OBJECTIVES = (BlocksSupervised, BlocksBandit, BlocksReinforce, BlocksDQN, BlocksDagger, BlocksSpo, BlocksPlanner)
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


@pytest.mark.parametrize("name", [name for name in list_pretrained() if name.startswith("blocks-")])
def test_every_released_blocks_config_names_the_class_it_loads_as(name, fallback_logos):
    text = (fetch_pretrained(name, progress=False) / "config.json").read_text()
    assert [former for former in RETIRED_CLASS_NAMES if f'"{former}"' in text] == []
    payload = json.loads(text)
    loaded = Grounded.from_pretrained(name)
    assert type(loaded).__name__ == payload["model_class"] == pretrained_entry(name).model_class
    ensemble = isinstance(loaded, BlocksEnsemble)
    policies, saved = (list(loaded.members), payload["config"]["members"]) if ensemble else ([loaded], [payload])
    for policy, config in zip(policies, saved, strict=True):
        assert type(policy).__name__ == config["model_class"] and isinstance(policy, BlocksPolicy)
        assert {key: policy.config()[key] for key in config["config"]} == config["config"]  # each one it takes


@pytest.mark.parametrize("former", sorted(RETIRED_CLASS_NAMES))
def test_a_config_naming_a_class_of_zoo_0_2_says_in_one_line_how_to_rewrite_it(former, tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_class": former, "config": {"vocabulary": ["<pad>"]}}))
    with pytest.raises(ValueError) as refused:
        Grounded.from_pretrained(tmp_path)
    message = str(refused.value)
    assert "\n" not in message and message.startswith(f"{tmp_path / 'config.json'}: {former} is a class name of zoo 0.2")
    assert "set its model_class to Blocks" in message


def test_an_ensemble_member_naming_block_policy_says_how_to_rewrite_it(tmp_path):
    BlocksEnsemble([BlocksSupervised(["<pad>", "<unk>"], **TINY)]).save_pretrained(tmp_path / "ensemble")
    config_path = tmp_path / "ensemble" / "config.json"
    payload = json.loads(config_path.read_text())
    payload["config"]["members"][0]["model_class"] = "BlockPolicy"
    config_path.write_text(json.dumps(payload))
    with pytest.raises(ValueError, match="ensemble member 0: BlockPolicy is a class name of zoo 0.2 and before, which "
                                         "zoo no longer reads: set its model_class to BlocksSupervised, BlocksBandit"):
        Grounded.from_pretrained(tmp_path / "ensemble")


def test_a_training_checkpoint_loads_as_the_class_it_names_from_its_saved_hyper_parameters(tmp_path):
    policy = BlocksBandit(["<pad>", "<unk>", "move"], **TINY, episodes_per_update=2)
    saved = {"state_dict": policy.state_dict(), "hyper_parameters": dict(policy.hparams), "model_class": "BlocksBandit"}
    torch.save(saved, tmp_path / "bandit.ckpt")
    loaded = load_training_checkpoint(tmp_path / "bandit.ckpt")
    assert type(loaded) is BlocksBandit and loaded.hparams == policy.hparams
    for name, tensor in policy.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], tensor), name
    del saved["model_class"]  # as zoo 0.1 wrote them
    torch.save(saved, tmp_path / "former.ckpt")
    with pytest.raises(ValueError, match="names no model class") as refused:
        load_training_checkpoint(tmp_path / "former.ckpt")
    assert "\n" not in str(refused.value)


def test_the_network_config_holds_every_setting_once_with_the_paper_s_sizes():
    config = BlocksNetworkConfig(["<pad>", "<unk>"])
    assert NETWORK_OPTIONS == tuple(config.to_dict())
    assert (config.embedding_dim, config.lstm_dim, config.image_dim, config.conv_channels, config.block_embedding_dim,
            config.direction_embedding_dim, config.hidden_dim, config.history) == (150, 250, 200, 32, 32, 24, 120, 4)
    documented = BlocksNetworkConfig.__doc__.split("Args:")[1]
    assert all(f"\n        {name}: " in documented for name in NETWORK_OPTIONS)
    with pytest.raises(ValueError, match="init must be one of"):
        BlocksNetworkConfig(["<pad>"], init="xavier")


@pytest.mark.parametrize("objective", OBJECTIVES, ids=lambda cls: cls.__name__)
def test_every_objective_builds_its_network_from_the_config_and_saves_every_setting(objective):
    config = BlocksNetworkConfig(["<pad>", "<unk>", "move"], **TINY, use_previous_action=False)
    policy = objective(**config.to_dict())
    assert policy.network_config == config and policy.network_options() == config.to_dict()
    assert {key: policy.hparams[key] for key in NETWORK_OPTIONS} == config.to_dict()
    assert policy.hidden.out_features == TINY["hidden_dim"] and not hasattr(policy, "previous_block")
    assert objective.config_keys() >= set(NETWORK_OPTIONS) | {"learning_rate"}
    default = objective(["<pad>", "<unk>"])
    assert {key: default.hparams[key] for key in NETWORK_OPTIONS[1:]} == \
        {key: value for key, value in BlocksNetworkConfig(["<pad>"]).to_dict().items() if key != "vocabulary"}
    with pytest.raises(TypeError, match=f"{objective.__name__} takes no argument\\(s\\) 'embeding_dim'"):
        objective(["<pad>", "<unk>"], embeding_dim=8)


def test_the_goal_predictor_reads_with_the_network_s_instruction_settings_and_keeps_the_rest():
    predictor = BlocksGoalPredictor(["<pad>", "<unk>", "left"], embedding_dim=8, lstm_dim=6, channels=4, hidden_dim=9)
    assert (predictor.instruction.embed.embedding_dim, predictor.instruction.lstm.hidden_size) == (8, 6)
    assert predictor.hparams.embedding_dim == 8 and predictor.hparams.lstm_dim == 6
    assert predictor.hparams.hidden_dim == 9  # taken and saved as every Blocks model takes it, though unread
    assert BlocksGoalPredictor(["<pad>"]).hparams.lstm_dim == BlocksNetworkConfig.lstm_dim
    with pytest.raises(TypeError, match="BlocksGoalPredictor takes no argument\\(s\\) 'hiden_dim'"):
        BlocksGoalPredictor(["<pad>"], hiden_dim=8)


def test_reinforce_is_the_bandit_weighted_by_the_return_instead_of_the_reward():
    rollout = SimpleNamespace(rewards=torch.tensor([1.0, -1.0, 2.0]), returns=torch.tensor([2.0, 1.0, 2.0]))
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
