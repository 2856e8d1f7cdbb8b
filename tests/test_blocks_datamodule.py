"""BlocksDataModule: supervised steps show the policy exactly what a rollout would show it."""

from dataclasses import replace

import torch

from zoo.blocks.datamodule import BlocksDataModule, StepCollator
from zoo.blocks.rollout import EpisodeRunner
from zoo.models.blocks.baselines import BlocksDemonstrations


def test_training_stacks_equal_what_the_policy_sees_when_replaying_the_demonstration():
    datamodule = BlocksDataModule(source="procedural", procedural_sizes={"train": 12, "dev": 4, "test": 4})
    datamodule.setup()
    example = datamodule.train_examples[0]
    collate = StepCollator([example], datamodule.demos, datamodule.vocabulary, datamodule.renderer)
    runner = EpisodeRunner(datamodule.renderer, datamodule.demos)
    runner.start([example], images=True, demonstrations=True)
    policy = BlocksDemonstrations()
    step = 0
    while not runner.env.all_done:
        observation = runner.observe()
        batch = collate([(0, step)])
        torch.testing.assert_close(batch["images"], observation.images.standardized(), atol=1e-4, rtol=1e-4)  # float32 rounding of two summation orders
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


def test_replay_schedule_draws_one_batch_per_episode_from_the_recent_steps():
    from zoo.resumable import ReplayMemoryBatches

    sizes = [3, 5, 2, 4]
    batches = ReplayMemoryBatches(sizes, batch_size=4, capacity=6, seed=1)
    drawn = list(batches)
    assert len(drawn) == len(sizes)  # one update per demonstration episode
    starts = [0, 3, 8, 10, 14]
    memory: list[int] = []
    for batch in drawn:
        assert len(batch) == len(set(batch)) <= 4
    # every batch holds steps of the episode just added or of the 6 steps before it
    generator = torch.Generator().manual_seed(1 * 1_000_003)
    for index, group in enumerate(torch.randperm(4, generator=generator).tolist()):
        memory = (memory + list(range(starts[group], starts[group + 1])))[-6:]
        assert set(drawn[index]) <= set(memory)
    # a resumed epoch skips exactly the batches already trained on
    batches.skip = 2
    assert list(batches) == drawn[2:]


def test_replay_schedule_loader_feeds_the_model_and_resumes():
    datamodule = BlocksDataModule(source="procedural", procedural_sizes={"train": 12, "dev": 4, "test": 4},
                                  batch_size=8, supervised_schedule="replay")
    datamodule.setup()
    loader = datamodule.train_dataloader()
    assert len(loader) == len(datamodule.train_examples)
    batches = list(loader)
    assert batches[0]["images"].shape[1:] == (15, 120, 120) and len(batches[0]["action"]) <= 8
    state = {"epoch": 0, "batches_consumed": 3}
    resumed = datamodule.train_dataloader()
    resumed.load_state_dict(state)
    torch.testing.assert_close(next(iter(resumed))["action"], batches[3]["action"])


def test_the_policy_embeds_raw_stacks_rollout_frames_and_standardised_stacks_alike():
    """Three routes to the image embedding (standardised stacks, RawStacks with the
    standardisation folded into the first convolution, a rollout's frames) agree."""
    from zoo.blocks.history import stacks_from_frames
    from zoo.callbacks.contextual_bandit import ContextualBanditLoop
    from zoo.models.blocks import BlocksBandit

    datamodule = BlocksDataModule(source="procedural", procedural_sizes={"train": 12, "dev": 4, "test": 4})
    datamodule.setup()
    torch.manual_seed(0)
    policy = BlocksBandit(datamodule.vocabulary.words, init="glorot")
    loop = ContextualBanditLoop(datamodule.train_examples, renderer=datamodule.renderer, demo_cache=datamodule.demos)
    rollout = loop.collect(policy, datamodule.train_examples[:3])
    stacks = stacks_from_frames(rollout.frames, rollout.steps, rollout.episodes)
    with torch.no_grad():
        reference = policy.image(stacks)
        groups = torch.unique(rollout.episodes, return_inverse=True)
        from_frames = policy._embed_rollout_frames(rollout.frames, rollout.steps, *groups)
        with_sums = policy._embed_rollout_frames(rollout.frames, rollout.steps, *groups, rollout.frame_sums)
        runner = EpisodeRunner(datamodule.renderer)
        runner.start(datamodule.train_examples[:3], images=True, demonstrations=False)
        raw = runner.observe().images
        torch.testing.assert_close(raw.standardized(), stacks[rollout.steps == 0], atol=1e-4, rtol=1e-4)
        folded = policy.image(raw)
    torch.testing.assert_close(from_frames, reference, atol=1e-3, rtol=1e-4)
    torch.testing.assert_close(with_sums, reference, atol=1e-3, rtol=1e-4)  # the rollout's own frame sums
    torch.testing.assert_close(folded, reference[rollout.steps == 0], atol=1e-3, rtol=1e-4)


def test_bandit_updates_score_each_action_with_the_probability_it_was_sampled_from():
    """On-policy: before any step, the update's log p(action) of every decision of a rollout
    equals what the policy gave that action when the rollout sampled it (tracked first
    convolution, folded standardisation and per-episode instruction pass included)."""
    from zoo.callbacks.contextual_bandit import ContextualBanditLoop
    from zoo.models.blocks import BlocksBandit

    datamodule = BlocksDataModule(source="procedural", procedural_sizes={"train": 12, "dev": 4, "test": 4})
    datamodule.setup()
    torch.manual_seed(0)
    policy = BlocksBandit(datamodule.vocabulary.words, init="glorot").eval()
    loop = ContextualBanditLoop(datamodule.train_examples, renderer=datamodule.renderer, demo_cache=datamodule.demos)
    sampled_log_p = []
    sample = policy.sample

    def recording(observation, generator):
        actions, blocks = sample(observation, generator)
        with torch.no_grad():
            sampled_log_p.append(policy.action_log_probs(observation).gather(1, actions[:, None]).squeeze(1))
        return actions, blocks

    policy.sample = recording
    rollout = loop.collect(policy, datamodule.train_examples[:4])
    with torch.no_grad():
        block, direction = policy.rollout_heads(rollout, torch.arange(len(rollout.episodes)))
        updated = policy.joint_log_probs(block, direction).gather(1, rollout.actions[:, None]).squeeze(1)
    torch.testing.assert_close(updated, torch.cat(sampled_log_p), atol=1e-3, rtol=1e-4)


def test_stop_rates_say_how_episodes_ended():
    """Greedy evaluation and the bandit's rollouts report the share of episodes ended by STOP
    (and, for rollouts, by a STOP at the goal): 1 for a policy that stops at once, 0 for one
    that always moves."""
    from zoo.blocks.board import BoardBatch, distance_error
    from zoo.blocks.evaluate import evaluate_policy
    from zoo.blocks.geometry import STOP
    from zoo.callbacks.contextual_bandit import ContextualBanditLoop
    from zoo.models.blocks.baselines import BlocksBaseline, BlocksStop

    class AlwaysMoveFirstBlockNorth(BlocksBaseline):
        encode_instructions = None

        def action_probabilities(self, observation):
            return self._one_hot(torch.zeros(len(observation), dtype=torch.long))

        def sample(self, observation, generator):  # (actions, sampled blocks), as BlocksPolicy.sample
            return self.act(observation), torch.zeros(len(observation), dtype=torch.long)

    class SampleStop(AlwaysMoveFirstBlockNorth):
        def action_probabilities(self, observation):
            return self._one_hot(torch.full((len(observation),), STOP, dtype=torch.long))

    datamodule = BlocksDataModule(source="procedural", procedural_sizes={"train": 6, "dev": 6, "test": 2})
    datamodule.setup()
    runner = EpisodeRunner(datamodule.renderer)
    assert evaluate_policy(BlocksStop(), datamodule.dev_examples, runner=runner, progress=False)["stop_rate"] == 1.0
    mover = AlwaysMoveFirstBlockNorth()
    assert evaluate_policy(mover, datamodule.dev_examples, runner=runner, progress=False)["stop_rate"] == 0.0

    loop = ContextualBanditLoop(datamodule.train_examples, renderer=datamodule.renderer, demo_cache=datamodule.demos)
    loop.collect(mover, datamodule.train_examples)
    assert loop.last_stats["stop_rate"] == 0.0 and loop.last_stats["stop_at_goal_rate"] == 0.0
    assert loop.last_stats["episode_length"] == 40.0
    loop.collect(SampleStop(), datamodule.train_examples)
    boards = BoardBatch.from_transitions([example.transition for example in datamodule.train_examples])
    at_goal = (distance_error(boards.start, boards.goal) < 1.0).float().mean()
    assert loop.last_stats["stop_rate"] == 1.0 and loop.last_stats["stop_at_goal_rate"] == float(at_goal)


def test_a_mean_baseline_leaves_only_the_entropy_term_when_every_reward_is_equal():
    """With ``reward_baseline="mean"`` equal rewards carry no signal: no action, sampled or
    not, is pushed up or down, where the raw rewards (the paper's) push every sampled action up."""
    from zoo.callbacks.contextual_bandit import ContextualBanditLoop
    from zoo.models.blocks import losses as objectives
    from zoo.models.blocks import BlocksBandit

    datamodule = BlocksDataModule(source="procedural", procedural_sizes={"train": 6, "dev": 2, "test": 2})
    datamodule.setup()
    torch.manual_seed(0)
    policy = BlocksBandit(datamodule.vocabulary.words, init="glorot", reward_baseline="mean")
    loop = ContextualBanditLoop(datamodule.train_examples, renderer=datamodule.renderer, demo_cache=datamodule.demos)
    rollout = loop.collect(policy, datamodule.train_examples[:3])
    rollout = replace(rollout, rewards=torch.full_like(rollout.rewards, 0.7))
    rows = torch.arange(len(rollout.episodes))
    with torch.no_grad():
        block, direction = policy.rollout_heads(rollout, rows)
        entropy_only = -0.1 * (objectives.entropy(block, objectives.LOG_FLOOR)
                               + objectives.entropy(direction, objectives.LOG_FLOOR)).mean()
        torch.testing.assert_close(policy.rollout_loss(rollout), entropy_only)
        policy.hparams.reward_baseline = "none"
        assert policy.rollout_loss(rollout) > entropy_only  # -0.7·log p > 0 for every step


def test_data_limit_keeps_the_first_examples_of_each_named_split():
    sizes = {"train": 20, "dev": 6, "test": 2}
    whole = BlocksDataModule(source="procedural", procedural_sizes=sizes)
    whole.setup()
    limited = BlocksDataModule(source="procedural", procedural_sizes=sizes, limit={"train": 3, "dev": 2})
    limited.setup()
    def names(examples):
        return [(e.transition.episode_id, e.instruction) for e in examples]

    assert names(limited.train_examples) == names(whole.train_examples[:3])
    assert names(limited.dev_examples) == names(whole.dev_examples[:2])
    assert names(limited.tuning_examples) == names(whole.tuning_examples)  # not named: whole
    assert len(limited.train_dataloader().dataset) < len(whole.train_dataloader().dataset)
    every = BlocksDataModule(source="procedural", procedural_sizes=sizes, limit=1)
    every.setup()
    assert (len(every.train_examples), len(every.tuning_examples), len(every.dev_examples)) == (1, 1, 1)


def test_a_bad_data_limit_is_refused_in_one_line():
    import pytest

    with pytest.raises(ValueError, match=r"^limit: unknown split 'valid' \(train, tuning, dev\)"):
        BlocksDataModule(source="procedural", limit={"valid": 3})
    with pytest.raises(ValueError, match=r"^limit: dev must be a positive integer, got 0$"):
        BlocksDataModule(source="procedural", limit={"dev": 0})


def test_the_recipe_takes_data_limit_and_checks_its_range():
    from pathlib import Path

    import pytest

    from zoo.experiment import load_config
    from zoo.recipe_schema import RecipeConfigError

    from zoo.recipes import recipe_files

    recipe = recipe_files("blocks-supervised")
    config = load_config(recipe, ["data.limit={train: 40, dev: 10}"])
    assert dict(config.data.limit) == {"train": 40, "dev": 10}
    assert load_config(recipe, ["data.limit=5"]).data.limit == 5
    with pytest.raises(RecipeConfigError, match="data.limit"):
        load_config(recipe, ["data.limit={train: 0}"])
    with pytest.raises(RecipeConfigError, match="data.limit"):
        load_config(recipe, ["data.limit={test: 3}"])


def test_procedural_sizes_past_the_limit_are_refused_before_any_board_is_made():
    import pytest

    from zoo.blocks.procedural import MAX_TRANSITIONS, procedural_split

    with pytest.raises(ValueError) as error:
        BlocksDataModule(source="procedural", procedural_sizes={"train": 1_000_000_000})
    assert str(error.value) == (f"procedural_sizes: train must be at most {MAX_TRANSITIONS:,} transitions "
                                f"(the real train split has 1,319), got 1,000,000,000")
    with pytest.raises(ValueError, match=f"at most {MAX_TRANSITIONS:,} transitions"):
        procedural_split("train", MAX_TRANSITIONS + 1)
