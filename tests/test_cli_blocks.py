"""The ``zoo`` command for Blocks: evaluation reproduces the paper, rendering writes files."""

import json

import pytest
from PIL import Image

from tests.conftest import requires_real_blocks
from zoo.cli import main


def last_json(capsys) -> dict:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


@requires_real_blocks
@pytest.mark.parametrize(
    "model, split, mean, median",
    [
        ("stop", "dev", 5.93, 5.69),
        ("demonstrations", "dev", 0.35, 0.30),
        ("stop", "test", 6.23, 6.12),
        ("demonstrations", "test", 0.37, 0.31),
    ],
)
@pytest.mark.slow
def test_eval_reproduces_the_papers_baselines(capsys, model, split, mean, median):
    assert main(["eval", "blocks", "--model", model, "--split", split, "--json"]) == 0
    result = last_json(capsys)
    assert result["mean"] == pytest.approx(mean, abs=0.02)
    assert result["median"] == pytest.approx(median, abs=0.02)
    assert result["data"] == "real"
    assert {"min_mean", "min_median", "n"} <= result.keys()
    # the mean's bootstrap interval over episodes: around the mean, a fraction of a block wide
    assert result["mean_low"] < result["mean"] < result["mean_high"] < result["mean_low"] + 0.5


@pytest.mark.slow
@requires_real_blocks
def test_random_policy_lands_in_the_papers_range_and_repeats_for_a_seed(capsys):
    main(["eval", "blocks", "--model", "random", "--split", "dev", "--seed", "3", "--json"])
    first = last_json(capsys)
    main(["eval", "blocks", "--model", "random", "--split", "dev", "--seed", "3", "--json"])
    again = last_json(capsys)
    assert {k: v for k, v in again.items() if k != "seconds"} == {k: v for k, v in first.items() if k != "seconds"}
    assert first["steps"] > first["n"] and first["seconds"] > 0
    assert 14.9 <= first["mean"] <= 15.8
    assert first["n"] == 1719


def test_eval_without_data_refuses_saying_where_it_comes_from_and_procedural_boards_only_when_asked(
        capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path))
    with pytest.raises(SystemExit) as refused:
        main(["eval", "blocks", "--model", "demonstrations", "--split", "test", "--limit", "20", "--json"])
    said = capsys.readouterr()
    assert refused.value.code == 2 and said.out == ""
    assert said.err.startswith("zoo: error: Blocks test data (testset.json) not found") and "--procedural" in said.err
    assert said.err.count("\n") == 1
    main(["eval", "blocks", "--model", "demonstrations", "--limit", "20", "--json", "--procedural"])
    result = last_json(capsys)
    assert result["data"] == "procedural" and result["n"] == 20
    assert result["mean"] < 1.0


def test_unknown_model_names_every_kind_of_model_it_could_have_been(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path))
    with pytest.raises(SystemExit) as exit:
        main(["eval", "blocks", "--model", "no-such-policy", "--procedural", "--limit", "2"])
    assert exit.value.code == 2
    message = capsys.readouterr().err
    assert "unknown model 'no-such-policy'" in message and "stop, random, demonstrations" in message


@pytest.mark.slow
@pytest.mark.parametrize("suffix", ["gif", "png"])
def test_render_writes_an_animation_of_the_rollout(tmp_path, suffix, capsys):
    out = tmp_path / f"episode.{suffix}"
    assert main(["blocks", "render", "--split", "dev", "--index", "0", "--out", str(out)]) == 0
    image = Image.open(out)
    if suffix == "gif":
        assert image.n_frames >= 3  # start, at least one move, STOP
    assert "wrote" in capsys.readouterr().out


def test_models_command_lists_models(capsys):
    main(["models", "blocks-*"])
    assert "blocks-demonstrations" in capsys.readouterr().out


def test_eval_saves_the_ensemble_it_evaluated_and_the_saved_one_scores_the_same(capsys, tmp_path, monkeypatch):
    import torch

    from zoo.models.blocks import BlocksSupervised

    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path / "no-data"))  # procedural boards
    members = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        policy = BlocksSupervised(["<pad>", "<unk>", "move"], embedding_dim=8, lstm_dim=8, image_dim=8, conv_channels=4,
                             hidden_dim=8)
        members.append(str(policy.save_pretrained(tmp_path / f"seed{seed}")))
    ensemble = tmp_path / "ensemble"
    assert main(["eval", "blocks", "--model", *members, "--procedural", "--limit", "6", "--save", str(ensemble), "--json"]) == 0
    first = last_json(capsys)
    assert main(["eval", "blocks", "--model", str(ensemble), "--procedural", "--limit", "6", "--json"]) == 0
    again = last_json(capsys)
    assert {k: again[k] for k in ("mean", "median", "steps", "n")} == {k: first[k] for k in ("mean", "median", "steps", "n")}
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")
    with pytest.raises(SystemExit):
        main(["eval", "blocks", "--model", *members, "--procedural", "--limit", "2", "--save", str(tmp_path / "taken")])
    assert (tmp_path / "taken" / "notes.txt").read_text() == "mine"


def test_eval_takes_a_training_checkpoint_and_refuses_a_file_that_is_not_one(capsys, tmp_path, monkeypatch):
    """Any epoch a run kept can be evaluated as it is (``weights_only``), without exporting it."""
    import torch

    from zoo.models.blocks import BlocksSupervised

    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path / "no-data"))  # procedural boards
    torch.manual_seed(0)
    policy = BlocksSupervised(["<pad>", "<unk>", "move"], embedding_dim=8, lstm_dim=8, image_dim=8, conv_channels=4,
                         hidden_dim=8)
    exported = policy.save_pretrained(tmp_path / "exported")
    import lightning

    checkpoint = tmp_path / "epoch003.ckpt"  # what a run's checkpoints/ folder holds, less the optimizer's state
    torch.save({"state_dict": policy.state_dict(), "hyper_parameters": dict(policy.hparams), "epoch": 3,
                "model_class": "BlocksSupervised", "pytorch-lightning_version": lightning.__version__}, checkpoint)
    assert main(["eval", "blocks", "--model", str(exported), "--procedural", "--limit", "6", "--json"]) == 0
    from_export = last_json(capsys)
    assert main(["eval", "blocks", "--model", str(checkpoint), "--procedural", "--limit", "6", "--json"]) == 0
    from_checkpoint = last_json(capsys)
    assert {k: from_checkpoint[k] for k in ("mean", "steps", "stop_rate")} == {k: from_export[k] for k in ("mean", "steps", "stop_rate")}

    (tmp_path / "notes.ckpt").write_bytes(b"not a checkpoint")
    with pytest.raises(SystemExit) as exit:
        main(["eval", "blocks", "--model", str(tmp_path / "notes.ckpt"), "--procedural", "--limit", "2"])
    assert exit.value.code == 2
    assert "not a Blocks policy training checkpoint" in capsys.readouterr().err


def test_eval_versus_pairs_two_policies_on_the_same_episodes(capsys, tmp_path, monkeypatch):
    """Staying put against the demonstrations: every episode's error is the stop policy's
    minus the demonstrations', so the paired difference is positive and its interval excludes 0;
    a policy against itself differs by exactly nothing."""
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path))  # procedural boards
    assert main(["eval", "blocks", "--model", "stop", "--versus", "demonstrations", "--procedural", "--limit", "12", "--json"]) == 0
    result = last_json(capsys)
    versus = result["versus"]
    assert versus["model"] == "demonstrations"
    assert versus["difference"] == pytest.approx(result["mean"] - versus["mean"])
    assert 0 < versus["ci95"][0] <= versus["difference"] <= versus["ci95"][1]

    assert main(["eval", "blocks", "--model", "stop", "--versus", "stop", "--procedural", "--limit", "12", "--json"]) == 0
    same = last_json(capsys)["versus"]
    assert same["difference"] == 0 and same["ci95"] == [0, 0]


def test_paired_bootstrap_refuses_values_of_different_examples():
    from zoo.bootstrap_intervals import Bootstrap

    with pytest.raises(ValueError, match="same examples"):
        Bootstrap(10).paired([1.0, 2.0], [1.0])
