"""BlocksDataModule: supervised steps show the policy exactly what a rollout would show it."""

import torch

from zoo.blocks.datamodule import BlocksDataModule, StepCollator
from zoo.blocks.rollout import EpisodeRunner
from zoo.models.blocks_baselines import DemonstrationPolicy


def test_training_stacks_equal_what_the_policy_sees_when_replaying_the_demonstration():
    datamodule = BlocksDataModule(source="procedural", procedural_sizes={"train": 12, "dev": 4, "test": 4})
    datamodule.setup()
    example = datamodule.train_examples[0]
    collate = StepCollator([example], datamodule.demos, datamodule.vocabulary, datamodule.renderer)
    runner = EpisodeRunner(datamodule.renderer, datamodule.demos)
    runner.start([example], images=True, demonstrations=True)
    policy = DemonstrationPolicy()
    step = 0
    while not runner.env.all_done:
        observation = runner.observe()
        batch = collate([(0, step)])
        torch.testing.assert_close(batch["images"], observation.images, atol=1e-4, rtol=1e-4)  # float32 rounding of two summation orders
        assert batch["previous_action"].item() == observation.previous_action.item()
        action = policy.score(observation).argmax(-1)
        assert batch["action"].item() == action.item()
        runner.step(action)
        step += 1
    assert step >= 2


def test_batches_hold_model_inputs_and_the_vocabulary_comes_from_train():
    datamodule = BlocksDataModule(source="procedural", procedural_sizes={"train": 12, "dev": 4, "test": 4}, batch_size=8)
    datamodule.setup()
    batch = next(iter(datamodule.train_dataloader()))
    assert batch["images"].shape == (8, 15, 120, 120)
    assert batch["tokens"].shape[0] == 8 and (batch["lengths"] > 0).all()
    assert ((batch["action"] >= 0) & (batch["action"] <= 80)).all()
    assert "block" in datamodule.vocabulary.words


def test_episode_mode_yields_example_indices():
    datamodule = BlocksDataModule(source="procedural", procedural_sizes={"train": 12, "dev": 4, "test": 4},
                                  mode="episodes", episodes_per_batch=5)
    datamodule.setup()
    batch = next(iter(datamodule.train_dataloader()))
    assert batch["episodes"].shape == (5,)
