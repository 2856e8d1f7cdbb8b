"""Losses that train the block policy, one per learning method of the paper's Table 2.

Each takes the policy's block and direction log-probabilities for a set of contexts and what
happened there. Written as pure functions of tensors so each can be checked by hand.
"""

from __future__ import annotations

import torch

from zoo.blocks.geometry import NUM_DIRECTIONS, STOP

STOP_DIRECTION = NUM_DIRECTIONS


def action_log_prob(block_log_probs: torch.Tensor, direction_log_probs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """log π(a) under the factorised policy: log p_block + log p_direction for a move, and
    log p_direction(STOP) alone for STOP (which names no block). [N]"""
    is_stop = actions == STOP
    block = torch.where(is_stop, 0, actions // NUM_DIRECTIONS)
    direction = torch.where(is_stop, STOP_DIRECTION, actions % NUM_DIRECTIONS)
    rows = torch.arange(len(actions), device=actions.device)
    block_term = torch.where(is_stop, 0.0, block_log_probs[rows, block])
    return block_term + direction_log_probs[rows, direction]


def entropy(log_probs: torch.Tensor) -> torch.Tensor:
    """Entropy of each row of a log-probability table. [N]"""
    return -(log_probs.exp() * log_probs).sum(dim=-1)


def supervised_loss(block_log_probs, direction_log_probs, gold_actions) -> torch.Tensor:
    """Negative log-likelihood of the demonstration's action (maximum likelihood)."""
    return -action_log_prob(block_log_probs, direction_log_probs, gold_actions).mean()


def bandit_loss(block_log_probs, direction_log_probs, actions, rewards, entropy_coefficient: float = 0.1) -> torch.Tensor:
    """Contextual-bandit objective: -r·log π(a) - λ·(H(block) + H(direction)), averaged.

    The reward is the immediate shaped reward of that one step, not a return: the paper
    treats each step as a separate bandit decision.
    """
    log_prob = action_log_prob(block_log_probs, direction_log_probs, actions)
    bonus = entropy(block_log_probs) + entropy(direction_log_probs)
    return (-rewards.to(log_prob.dtype) * log_prob - entropy_coefficient * bonus).mean()


def reinforce_loss(block_log_probs, direction_log_probs, actions, returns, episodes, entropy_coefficient: float = 0.1) -> torch.Tensor:
    """REINFORCE without a baseline: every step weighted by its episode's total reward.

    Summed over each episode's steps and averaged over episodes, so the gradient is the
    usual Monte-Carlo policy gradient estimate.
    """
    log_prob = action_log_prob(block_log_probs, direction_log_probs, actions)
    bonus = entropy(block_log_probs) + entropy(direction_log_probs)
    per_step = -returns.to(log_prob.dtype) * log_prob - entropy_coefficient * bonus
    n_episodes = int(torch.unique(episodes).numel())
    return per_step.sum() / max(n_episodes, 1)
