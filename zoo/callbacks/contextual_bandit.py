"""``ContextualBanditLoop``: the data-collection half of the paper's learning method.

Before every training batch, the callback plays the current policy in the vectorised
simulator on that batch's episodes, sampling actions from the policy, and records each step's
context, action and immediate shaped reward. The LightningModule then only sees
(context, action, reward) tuples and applies its bandit loss; rollout and learning stay
separate and each is testable alone. Each batch's sampling stream is seeded from (seed,
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
from zoo.models.blocks.losses import rewards_to_go


class ContextualBanditLoop(L.Callback):
    """Fills ``batch["rollout"]`` with the sampled experience of ``batch["episodes"]``.

    ``rollout`` holds: ``frames`` uint8 [T+1, B, 3, H, W] (board after t actions),
    ``steps``/``episodes`` [N] (which (t, b) were decisions), ``actions``, ``previous_actions``,
    ``blocks`` (the sampled block, also on STOP steps), ``rewards`` and ``returns`` [N]
    (immediate reward; the reward-to-go, for REINFORCE), ``tokens``/``lengths`` of the B instructions.
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
        batch["rollout"] = self.collect(pl_module, examples)
        pl_module.log_dict({f"bandit/{k}": v for k, v in self.last_stats.items()}, batch_size=len(examples))

    @torch.no_grad()
    def collect(self, policy, examples: Sequence[Example]) -> dict[str, torch.Tensor]:
        """Play ``examples`` sampling from the policy; return the logged experience."""
        was_training = policy.training
        policy.eval()
        sampled_blocks: list[torch.Tensor] = []

        def sample(observation):
            actions, blocks = policy.sample(observation, self.generator)
            sampled_blocks.append(blocks)
            return actions

        rollout = self.runner.record(examples, sample, encode=policy.encode_instructions,
                                     featurize=policy.instruction_featurizer, track=policy.image_tracker_factory)
        rollout["blocks"] = torch.cat(sampled_blocks)
        rollout["returns"] = rewards_to_go(rollout["rewards"], rollout["episodes"], rollout["steps"])
        totals = torch.zeros(len(examples), dtype=torch.float64).index_add_(0, rollout["episodes"], rollout["rewards"])
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
