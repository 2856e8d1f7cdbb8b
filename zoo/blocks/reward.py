"""The Blocks reward (docs/blocks_environment.md §4): the problem reward plus the two shaping terms of the paper.

* **problem reward**: -δ per move, +1 for STOP within one block length of the goal (total
  distance over all blocks), -1 for any other STOP, -1 for a failed move;
* **F1**, distance shaping: the decrease in total distance, in block lengths;
* **F2**, look-back demonstration advice: φ2(s, a) - φ2 of the previous step, where φ2 is 1
  when the action is what the demonstration does from the nearest point of its path.

Reward type 4 of the original simulator (problem + F1 + F2) is the paper's main setting; the
other combinations are its ablations, selected by :class:`RewardConfig`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from zoo.blocks.board import BoardBatch, total_distance
from zoo.blocks.demos import DemoBatch
from zoo.blocks.env import StepOutcome
from zoo.blocks.geometry import BLOCK_SIZE

DELTA = float(np.float32(0.02))
"""Per-move cost δ; the original stored -0.02 as a float32 literal (-0.0199999996)."""

REWARD_VARIANTS = ("problem", "f1", "f2", "shaped", "distance")


@dataclass(frozen=True)
class RewardConfig:
    """Which reward a training run optimises.

    ``variant``: ``problem`` (no shaping), ``f1``, ``f2``, ``shaped`` (F1 + F2, the paper's
    approach) or ``distance`` (the paper's "distance reward" ablation: minus the total distance
    to the goal after every step, in block lengths). ``failure_penalty``: reward of a failed
    move; the paper says -1, the original code's unshaped type gave -δ (docs/blocks_environment.md §8.3).
    """

    variant: str = "shaped"
    failure_penalty: float = -1.0
    stop_success: float = 1.0
    stop_failure: float = -1.0

    def __post_init__(self):
        if self.variant not in REWARD_VARIANTS:
            raise ValueError(f"unknown reward variant {self.variant!r}; choose one of {REWARD_VARIANTS}")

    @property
    def uses_f1(self) -> bool:
        return self.variant in ("f1", "shaped")

    @property
    def uses_f2(self) -> bool:
        return self.variant in ("f2", "shaped")


def advice_potential(
    main_position: torch.Tensor, actions: torch.Tensor, demos: DemoBatch, block_size: float = BLOCK_SIZE
) -> torch.Tensor:
    """φ2(s, a): 1 if ``a`` is the demonstration's action at the path point nearest the main
    block (within one block length, not the appended final duplicate), else -δ. [B]"""
    gaps = (demos.points - main_position[:, None, :]).norm(dim=-1)  # [B, L+1]; padding is +inf
    nearest = gaps.argmin(dim=-1)  # first index among ties, as the original
    rows = torch.arange(len(actions), device=actions.device)
    close = gaps[rows, nearest] < block_size
    on_path = nearest < demos.lengths
    agrees = demos.actions[rows, nearest] == actions
    return torch.where(close & on_path & agrees, 1.0, -DELTA).to(main_position.dtype)


class ShapedReward:
    """Computes each step's reward for a batch of episodes and keeps the look-back state."""

    def __init__(self, config: RewardConfig | None = None, block_size: float = BLOCK_SIZE):
        self.config = config or RewardConfig()
        self.block_size = block_size

    def reset(self, boards: BoardBatch, demos: DemoBatch | None) -> None:
        if self.config.uses_f2 and demos is None:
            raise ValueError(f"reward variant {self.config.variant!r} needs demonstrations")
        self.boards, self.demos = boards, demos
        self.previous_advice = torch.full((len(boards),), -DELTA, dtype=boards.start.dtype, device=boards.start.device)

    def __call__(self, outcome: StepOutcome, actions: torch.Tensor) -> torch.Tensor:
        """Reward of the step just taken ([B]; 0 for episodes that had already ended)."""
        config, goal = self.config, self.boards.goal
        before = total_distance(outcome.previous, goal)
        after = total_distance(outcome.positions, goal)
        if config.variant == "distance":
            reward = -after / self.block_size
            return torch.where(outcome.acted, reward, torch.zeros_like(reward))
        stop_reward = torch.where(after < self.block_size, config.stop_success, config.stop_failure)
        reward = torch.where(outcome.stopped, stop_reward, -DELTA * torch.ones_like(after))
        if config.uses_f1:
            reward = reward + (before - after) / self.block_size
        if config.uses_f2:
            rows = torch.arange(len(actions), device=actions.device)
            main_position = outcome.previous[rows, self.boards.main_block]
            advice = advice_potential(main_position, actions, self.demos, self.block_size)
            reward = reward + torch.where(outcome.failed, 0.0, advice - self.previous_advice)
            self.previous_advice = torch.where(outcome.acted & ~outcome.failed, advice, self.previous_advice)
        reward = torch.where(outcome.failed, torch.full_like(reward, config.failure_penalty), reward)
        return torch.where(outcome.acted, reward, torch.zeros_like(reward))
