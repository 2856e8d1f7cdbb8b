"""The Grounded interface, the registry and save/load of weights."""

import json

import pytest
import torch

import zoo
from zoo.blocks.procedural import procedural_split
from zoo.blocks.rollout import EpisodeRunner
from zoo.blocks.vocab import build_vocabulary
from zoo.models.blocks import BlocksSupervised


def tiny_policy(**overrides):
    vocabulary = build_vocabulary(["move block 6 just right of block 11"])
    options = dict(embedding_dim=8, lstm_dim=8, image_dim=8, conv_channels=4, block_embedding_dim=4,
                   direction_embedding_dim=4, hidden_dim=8)
    return BlocksSupervised(vocabulary, **{**options, **overrides})


def test_registry_lists_and_creates_models():
    assert {"blocks-stop", "blocks-random", "blocks-demonstrations"} <= set(zoo.list_models())
    assert zoo.list_models("blocks-r*") == ["blocks-random", "blocks-reinforce"]
    assert zoo.create_model("blocks-random", seed=5).hparams.seed == 5
    with pytest.raises(KeyError, match="known models"):
        zoo.create_model("blocks-oracle-of-delphi")


def test_block_policy_scores_the_81_actions_as_a_distribution():
    policy = tiny_policy()
    split = procedural_split("dev", transitions=2)
    runner = EpisodeRunner()
    runner.start(split.examples[:3], images=True, demonstrations=False, encode=policy.encode_instructions)
    scores = policy.score(runner.observe())
    assert scores.shape == (3, 81)
    torch.testing.assert_close(scores.sum(-1), torch.ones(3))
    assert policy.predict(runner.observe()).shape == (3,)


def test_save_and_load_round_trip_through_safetensors(tmp_path):
    policy = tiny_policy()
    policy.save_pretrained(tmp_path / "policy")
    assert sorted(p.name for p in (tmp_path / "policy").iterdir()) == [".zoo-output", "config.json", "model.safetensors"]
    config = json.loads((tmp_path / "policy" / "config.json").read_text())
    assert config["model_class"] == "BlocksSupervised" and config["config"]["lstm_dim"] == 8
    loaded = zoo.Grounded.from_pretrained(tmp_path / "policy")
    assert isinstance(loaded, BlocksSupervised)
    for (name, a), (_, b) in zip(policy.state_dict().items(), loaded.state_dict().items()):
        torch.testing.assert_close(a, b, msg=name)


def test_loading_into_the_wrong_class_or_a_bad_directory_is_refused(tmp_path):
    tiny_policy().save_pretrained(tmp_path / "policy")
    with pytest.raises(TypeError, match="holds a BlocksSupervised"):
        zoo.BlocksRandom.from_pretrained(tmp_path / "policy")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="config.json"):
        zoo.Grounded.from_pretrained(tmp_path / "empty")


def test_save_replaces_an_existing_directory_without_leftovers(tmp_path):
    target = tmp_path / "policy"
    tiny_policy().save_pretrained(target)
    tiny_policy(hidden_dim=6).save_pretrained(target)
    assert json.loads((target / "config.json").read_text())["config"]["hidden_dim"] == 6
    assert [p.name for p in tmp_path.iterdir()] == ["policy"]


def test_unknown_pretrained_name_lists_what_is_released():
    with pytest.raises(KeyError):
        zoo.load_pretrained("blocks-from-the-future")


def test_reset_direction_head_changes_only_that_head():
    policy = tiny_policy()
    before = {k: v.clone() for k, v in policy.state_dict().items()}
    torch.manual_seed(1)
    policy.reset_direction_head()
    changed = {k for k, v in policy.state_dict().items() if not torch.equal(v, before[k])}
    assert changed == {"direction_head.weight"}  # the bias is re-zeroed, as it was


def test_a_policy_trained_without_the_previous_action_can_be_given_it_and_acts_the_same():
    torch.manual_seed(0)
    without = tiny_policy(use_previous_action=False, init="original")
    torch.manual_seed(1)
    grown = without.with_previous_action_input()
    assert grown.hparams.use_previous_action and not without.hparams.use_previous_action
    assert grown.previous_block.weight.abs().max() > 0  # new inputs, freshly initialised
    columns = without.hidden.weight.shape[1]
    torch.testing.assert_close(grown.hidden.weight[:, :columns], without.hidden.weight)
    assert grown.hidden.weight[:, columns:].abs().max() > 0  # so the bandit's gradient reaches the embeddings
    runner = EpisodeRunner()
    runner.start(procedural_split("dev", transitions=2).examples[:3], images=True, demonstrations=False,
                 encode=grown.encode_instructions)
    observation = runner.observe()
    torch.testing.assert_close(grown.score(observation), without.score(observation), atol=1e-4, rtol=0)
    with pytest.raises(ValueError, match="already reads"):
        grown.with_previous_action_input()


def test_an_ensemble_averages_its_members_action_probabilities():
    from zoo.models.blocks import BlocksEnsemble

    first, second = tiny_policy(), tiny_policy()
    split = procedural_split("dev", transitions=2)
    runner = EpisodeRunner()
    runner.start(split.examples[:2], images=True, demonstrations=False)
    observation = runner.observe()
    expected = (first.score(observation) + second.score(observation)) / 2
    torch.testing.assert_close(BlocksEnsemble([first, second]).score(observation), expected)


def test_an_ensemble_saves_and_loads_as_one_model(tmp_path):
    from zoo.grounded import Grounded
    from zoo.models.blocks import BlocksEnsemble

    torch.manual_seed(0)
    first = tiny_policy()
    torch.manual_seed(1)
    second = tiny_policy()
    ensemble = BlocksEnsemble([first, second])
    ensemble.save_pretrained(tmp_path / "ensemble")
    loaded = Grounded.from_pretrained(tmp_path / "ensemble")
    assert isinstance(loaded, BlocksEnsemble) and len(loaded.members) == 2
    split = procedural_split("dev", transitions=2)
    runner = EpisodeRunner()
    runner.start(split.examples[:2], images=True, demonstrations=False)
    observation = runner.observe()
    torch.testing.assert_close(loaded.eval().score(observation), ensemble.eval().score(observation), rtol=0, atol=0)


def test_an_ensemble_config_naming_anything_but_blocks_policies_is_refused(tmp_path):
    import json

    from zoo.grounded import Grounded
    from zoo.models.blocks import BlocksEnsemble

    BlocksEnsemble([tiny_policy()]).save_pretrained(tmp_path / "ensemble")
    config_path = tmp_path / "ensemble" / "config.json"
    payload = json.loads(config_path.read_text())
    payload["config"]["members"][0]["model_class"] = "IRRanker"
    config_path.write_text(json.dumps(payload))
    with pytest.raises(ValueError, match="member 0 is a IRRanker, not a Blocks policy"):
        Grounded.from_pretrained(tmp_path / "ensemble")
    payload["config"]["members"] = [{"model_class": "BlocksSupervised"}]
    config_path.write_text(json.dumps(payload))
    with pytest.raises(ValueError, match="member 0 must be"):
        Grounded.from_pretrained(tmp_path / "ensemble")
