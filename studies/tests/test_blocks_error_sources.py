"""studies/blocks_error_sources.py: a Blocks policy's error split into the gold block and the others."""

from __future__ import annotations

import pytest
import torch

from zoo.blocks.datamodule import BlocksDataModule
from zoo.blocks.geometry import NUM_ACTIONS, NUM_DIRECTIONS, STOP
from zoo.models.blocks.agent import BlocksAgent
from zoo.models.blocks.baselines import BlocksDemonstrations, BlocksStop
from study_support import load_study


def error_sources():
    return load_study("blocks_error_sources")


class AlwaysBlockZero(BlocksAgent):
    """Pushes block 0 one way for the whole episode; STOP is its second choice."""

    needs_images = False

    def action_probabilities(self, observation):
        probabilities = torch.zeros(len(observation), NUM_ACTIONS)
        probabilities[:, 1] = 0.6  # block 0, direction 1
        probabilities[:, STOP] = 0.4
        return probabilities


@pytest.fixture(scope="module")
def dev_examples():
    datamodule = BlocksDataModule(source="procedural", procedural_sizes={"train": 2, "dev": 6, "test": 2})
    datamodule.setup()
    return datamodule.dev_examples


def test_the_gold_block_mask_allows_its_four_moves_and_stop():
    mask = error_sources().gold_block_mask(torch.tensor([0, 7]))
    assert mask[0].nonzero().flatten().tolist() == [0, 1, 2, 3, STOP]
    assert mask[1].nonzero().flatten().tolist() == [7 * NUM_DIRECTIONS + d for d in range(NUM_DIRECTIONS)] + [STOP]


def test_oracles_and_stop_touch_only_the_gold_block(dev_examples):
    study = error_sources()
    stop = study.play(BlocksStop(), dev_examples, given_block=False)
    assert stop["other_blocks"] == 0.0 and stop["gold_block"] == stop["final"] and stop["stop_rate"] == 1.0
    assert stop["first_move_gold_block"] is None and stop["moves"] == 0
    oracle = study.play(BlocksDemonstrations(), dev_examples, given_block=False)
    assert oracle["other_blocks"] == 0.0 and oracle["only_gold_block_moved"] == 1.0
    assert oracle["first_move_gold_block"] == 1.0 and oracle["final"] < stop["final"]


def test_giving_the_block_keeps_a_policy_off_the_other_blocks(dev_examples):
    study = error_sources()
    as_is = study.play(AlwaysBlockZero(), dev_examples, given_block=False)
    given = study.play(AlwaysBlockZero(), dev_examples, given_block=True)
    assert as_is["final"] == pytest.approx(as_is["gold_block"] + as_is["other_blocks"], abs=2e-3)
    assert as_is["other_blocks"] > 0 and as_is["only_gold_block_moved"] < 1.0  # block 0 is not always the gold one
    assert given["other_blocks"] == 0.0 and given["only_gold_block_moved"] == 1.0
    assert given["stop_rate"] > 0  # where block 0 is not the gold block, STOP is the best allowed action
