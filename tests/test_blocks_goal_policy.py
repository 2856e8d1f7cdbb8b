"""The goal policy: a frozen goal reader reads the block and goal once per episode from the start
frame and the instruction, and the actor moves that block toward the marked goal. It acts from
observations alone and saves and loads as one policy."""

from dataclasses import replace

import pytest
import torch

from zoo.blocks.evaluate import evaluate_policy
from zoo.blocks.geometry import NUM_DIRECTIONS, STOP
from zoo.blocks.goals import MAP_CELLS
from zoo.blocks.procedural import procedural_split
from zoo.blocks.rollout import EpisodeRunner
from zoo.blocks.vocab import Vocabulary, build_vocabulary
from zoo.grounded import Grounded
from zoo.models.blocks import BlocksGoal, BlocksGoalPredictor
from zoo.models.blocks.goal_actor import goal_marks

SMALL = {"embedding_dim": 8, "lstm_dim": 8}


@pytest.fixture(scope="module")
def episodes():
    return procedural_split("train", transitions=4, seed=5).examples[:6]


@pytest.fixture(scope="module")
def words(episodes):
    return Vocabulary(build_vocabulary(e.instruction for e in episodes)).words


def small_policy(words, **options) -> BlocksGoal:
    torch.manual_seed(0)
    return BlocksGoal(words, reader={"channels": 4, "levels": 2}, actor_channels=4, history=0, **SMALL, **options).eval()


def test_a_goal_mark_peaks_at_its_cells_centre():
    cell = torch.tensor([17 * MAP_CELLS + 40])
    mark = goal_marks(cell)[0, 0]
    row, column = divmod(int(mark.argmax()), mark.shape[-1])
    assert (row // 2, column // 2) == (17, 40) and float(mark.max()) > 0.7 and float(mark[0, 0]) < 1e-6


def test_the_policy_moves_only_the_block_it_read_or_stops(episodes, words):
    policy = small_policy(words)
    runner = EpisodeRunner()
    runner.start(episodes, images=True, demonstrations=False, encode=policy.instruction_encoder,
                 featurize=policy.instruction_featurizer)
    observation = runner.observe()
    reading = observation.instruction_features
    assert reading.shape == (len(episodes), 2)  # (goal cell, block), read from the first frame
    probabilities = policy.action_probabilities(observation)
    assert torch.allclose(probabilities.sum(-1), torch.ones(len(episodes)), atol=1e-5)
    moves = probabilities[:, :STOP].view(len(episodes), -1, NUM_DIRECTIONS).sum(-1)
    read_block = reading[:, 1].long()
    assert torch.allclose(moves.sum(-1), moves[torch.arange(len(episodes)), read_block])


def test_the_policy_acts_on_observations_alone(episodes, words):
    """No board, positions, moves counted or demonstrations: the simulator's state is never read."""
    policy = small_policy(words)
    runner = EpisodeRunner()
    runner.start(episodes, images=True, demonstrations=False, encode=policy.instruction_encoder,
                 featurize=policy.instruction_featurizer)
    for _ in range(3):
        observation = runner.observe()
        bare = replace(observation, boards=None, positions=None, moves_taken=None, demos=None)
        actions = policy.act(bare)
        assert torch.equal(actions, policy.act(observation))
        runner.step(actions)


def test_without_a_kept_reading_only_a_first_step_can_be_read(episodes, words):
    policy = small_policy(words)
    runner = EpisodeRunner()
    runner.start(episodes, images=True, demonstrations=False, encode=policy.instruction_encoder)  # no featurize
    first = runner.observe()
    kept = EpisodeRunner()
    kept.start(episodes, images=True, demonstrations=False, encode=policy.instruction_encoder,
               featurize=policy.instruction_featurizer)
    assert torch.equal(policy.act(first), policy.act(kept.observe()))
    runner.step(policy.act(first))
    with pytest.raises(ValueError, match="first step"):
        policy.act(runner.observe())


@pytest.mark.slow
def test_a_policy_from_a_trained_reader_keeps_it_frozen_and_saves_its_settings(tmp_path, episodes, words):
    torch.manual_seed(1)
    BlocksGoalPredictor(words, channels=4, levels=3, **SMALL).save_pretrained(tmp_path / "reader")
    policy = BlocksGoal(words, reader_from=str(tmp_path / "reader"), actor_channels=4, history=0, **SMALL).train()
    assert not policy.reader.training and not any(p.requires_grad for p in policy.reader.parameters())
    assert policy.hparams.reader["levels"] == 3 and policy.hparams.reader_from is None
    assert {id(p) for group in policy.configure_optimizers().param_groups for p in group["params"]} == \
        {id(p) for p in policy.actor.parameters()}
    policy.save_pretrained(tmp_path / "policy")
    loaded = Grounded.from_pretrained(tmp_path / "policy")
    result, again = (evaluate_policy(model.eval(), episodes[:2], progress=False) for model in (policy, loaded))
    assert all(result[key] == again[key] for key in ("mean", "median", "min_mean", "stop_rate"))


def test_a_reader_of_another_vocabulary_is_refused_in_one_line(tmp_path, words):
    BlocksGoalPredictor(words + ["extra"], channels=4, levels=2, **SMALL).save_pretrained(tmp_path / "reader")
    with pytest.raises(ValueError, match="another vocabulary"):
        BlocksGoal(words, reader_from=str(tmp_path / "reader"), history=0, **SMALL)


@pytest.mark.slow
def test_zoo_eval_blocks_reports_what_a_reader_reads_and_what_a_goal_policy_adds_by_acting(tmp_path, capsys, words):
    import json

    from zoo.blocks.procedural import procedural_split
    from zoo.cli import main

    dev_words = Vocabulary(build_vocabulary(e.instruction for e in procedural_split("dev").examples)).words
    torch.manual_seed(2)
    BlocksGoalPredictor(dev_words, channels=4, levels=2, **SMALL).save_pretrained(tmp_path / "reader")
    BlocksGoalPredictor(dev_words, channels=4, levels=2, **SMALL).save_pretrained(tmp_path / "reader2")
    BlocksGoal(dev_words, reader_from=str(tmp_path / "reader"), actor_channels=4, history=0,
               **SMALL).save_pretrained(tmp_path / "policy")
    common = ["eval", "blocks", "--procedural", "--limit", "3", "--threads", "1", "--json"]

    assert main([*common, "--model", str(tmp_path / "reader")]) == 0
    read = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(read["reading"]) == {"goal_error", "goal_error_median", "within_one_block", "block_accuracy",
                                    "carried_out_error"} and "mean" not in read  # a reader does not act

    assert main([*common, "--model", str(tmp_path / "reader"), str(tmp_path / "reader2")]) == 0  # one averaged reader
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["reading"]["goal_error"] >= 0

    assert main([*common, "--model", str(tmp_path / "policy")]) == 0
    acted = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert acted["reading"] == read["reading"]  # the policy's reader is that reader
    assert acted["acting_cost"] == pytest.approx(acted["mean"] - read["reading"]["carried_out_error"])

    with pytest.raises(SystemExit) as refused:
        main([*common, "--model", str(tmp_path / "reader"), "--versus", "stop"])
    assert refused.value.code == 2 and "a goal reader does not act" in capsys.readouterr().err
