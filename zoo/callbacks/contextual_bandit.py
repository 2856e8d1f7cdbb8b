"""``ContextualBanditLoop``: the data-collection half of the paper's learning method.

Before every training batch, the callback plays the current policy in the vectorised
simulator on that batch's episodes, sampling actions from the policy, and records each step's
context, action and immediate shaped reward (a :class:`~zoo.models.blocks.experience.SampledRollout`).
The LightningModule then only sees (context, action, reward) tuples and applies its bandit
loss in ``update``; rollout and learning stay separate and each is testable alone. Each batch's sampling stream is seeded from (seed,
rank, optimizer steps so far), so a resumed run draws the same actions as an uninterrupted one and
DDP ranks draw independently.
"""

from __future__ import annotations

from typing import Sequence

import lightning as L
import torch

from zoo.blocks.records import Example
from zoo.blocks.reward import RewardConfig
from zoo.blocks.rollout import EpisodeRunner
from zoo.models.blocks.experience import SampledRollout
from zoo.models.blocks.losses import rewards_to_go


class ContextualBanditLoop(L.Callback):
    """Hands the module the sampled experience of ``batch["episodes"]`` before each batch: a
    :class:`~zoo.models.blocks.experience.SampledRollout` (its fields and shapes there).

    Args:
        examples: The training examples ``batch["episodes"]`` indexes.
        reward: What each decision is scored by (default :class:`RewardConfig`'s).
        seed: Seeds each batch's sampling stream, with the rank and the optimizer steps so far.
        renderer: Draws the boards (default: the simulator's own).
        demo_cache: Where the demonstrations the reward reads are cached (default: a new cache).
        horizon: The most moves an episode may take.
        history: The previous frames in each image stack.
    """

    def __init__(self, examples: Sequence[Example], reward: RewardConfig | None = None, seed: int = 0,
                 renderer=None, demo_cache=None, horizon: int = 40, history: int = 4):
        self.examples = examples
        self.reward = reward or RewardConfig()
        self.runner = EpisodeRunner(renderer, demo_cache, self.reward, horizon, history)
        self.seed = seed
        self.generator = torch.Generator().manual_seed(seed)
        self.last_stats: dict[str, float] = {}

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        # The sampling stream of each batch is a function of (seed, rank, optimizer steps so
        # far): a resumed run draws what an uninterrupted one would (the step count is in the
        # checkpoint; Lightning's batch_idx restarts mid-epoch), and DDP ranks draw apart.
        self.generator.manual_seed(self.stream_seed(trainer.global_rank, trainer.global_step))
        examples = [self.examples[i] for i in batch["episodes"].tolist()]
        pl_module.set_experience(self.collect(pl_module, examples))
        pl_module.log_dict({f"bandit/{k}": v for k, v in self.last_stats.items()}, batch_size=len(examples))

    @torch.no_grad()
    def collect(self, policy, examples: Sequence[Example]) -> SampledRollout:
        """Play ``examples`` sampling from the policy; return the logged experience."""
        was_training = policy.training
        policy.eval()
        sampled_blocks: list[torch.Tensor] = []

        def sample(observation):
            actions, blocks = policy.sample(observation, self.generator)
            sampled_blocks.append(blocks)
            return actions

        record = self.runner.record(examples, sample, encode=policy.encode_instructions,
                                    featurize=policy.instruction_featurizer, track=policy.image_tracker_factory)
        rollout = SampledRollout(**record, blocks=torch.cat(sampled_blocks),
                                 returns=rewards_to_go(record["rewards"], record["episodes"], record["steps"]))
        totals = torch.zeros(len(examples), dtype=torch.float64).index_add_(0, rollout.episodes, rollout.rewards)
        env = self.runner.env
        stopped = env.stopped
        self.last_stats = {
            "episode_return": float(totals.mean()),
            "final_error": float(env.error().mean()),
            "episode_length": float(env.moves_taken.float().mean()),
            # Whether sampling still explores STOP, and where: a STOP within one block length of
            # the goal earns +1, anywhere else -1 (docs/blocks_environment.md §4.2).
            "stop_rate": float(stopped.float().mean()),
            "stop_at_goal_rate": float((stopped & (env.error() < 1.0)).float().mean()),
        }
        policy.train(was_training)
        return rollout

    def stream_seed(self, rank: int, step: int) -> int:
        return ((self.seed * 1_000_003 + rank) * 1_000_037 + step) % (2**62)
