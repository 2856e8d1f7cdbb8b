"""Losses that train the block policy, one per learning method of the paper's Table 2.

Each takes the policy's block and direction log-probabilities for a set of contexts and what
happened there. Written as pure functions of tensors so each can be checked by hand.

Two forms of the policy-gradient terms exist (``form``):

* ``"original"``, the original trainer's (docs/blocks_environment.md §6.4): the log-likelihood of a decision is
  ``log(p_block[b] + 1e-6) + log(p_direction[d] + 1e-6)`` for the block ``b`` and direction
  ``d`` that were *sampled*, on every step, STOP steps included (the original samples a
  block there too and then ignores it), and the entropies use the same ``+ 1e-6``;
* ``"joint"``: the exact log-probability of the joint action, in which STOP names no block,
  so a STOP step carries no block term.
"""

from __future__ import annotations

import torch

from zoo.blocks.geometry import NUM_DIRECTIONS, STOP

STOP_DIRECTION = NUM_DIRECTIONS
LOG_FLOOR = 1e-6
"""The original trainer's ``log(p + 1e-6)``."""

LOSS_FORMS = ("original", "joint")


def split_actions(actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(block, direction) of joint actions; STOP's block is reported as 0."""
    is_stop = actions == STOP
    return torch.where(is_stop, 0, actions // NUM_DIRECTIONS), torch.where(is_stop, STOP_DIRECTION, actions % NUM_DIRECTIONS)


def action_log_prob(block_log_probs: torch.Tensor, direction_log_probs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """log π(a) under the factorised policy: log p_block + log p_direction for a move, and
    log p_direction(STOP) alone for STOP (which names no block). [N]"""
    block, direction = split_actions(actions)
    rows = torch.arange(len(actions), device=actions.device)
    block_term = torch.where(actions == STOP, 0.0, block_log_probs[rows, block])
    return block_term + direction_log_probs[rows, direction]


def sampled_log_prob(block_log_probs, direction_log_probs, blocks, actions) -> torch.Tensor:
    """The original trainer's log-likelihood of a sampled (block, direction) pair: both terms
    on every step, each as ``log(p + 1e-6)``. [N]"""
    _, direction = split_actions(actions)
    rows = torch.arange(len(actions), device=actions.device)
    block_p = block_log_probs[rows, blocks].exp()
    direction_p = direction_log_probs[rows, direction].exp()
    return torch.log(block_p + LOG_FLOOR) + torch.log(direction_p + LOG_FLOOR)


def entropy(log_probs: torch.Tensor, floor: float = 0.0) -> torch.Tensor:
    """Entropy of each row of a log-probability table (``-Σ p·log(p + floor)``). [N]"""
    if floor:
        probabilities = log_probs.exp()
        return -(probabilities * torch.log(probabilities + floor)).sum(dim=-1)
    return -(log_probs.exp() * log_probs).sum(dim=-1)


def supervised_loss(block_log_probs, direction_log_probs, gold_actions, stop_weight: float = 1.0) -> torch.Tensor:
    """Negative log-likelihood of the demonstration's action (maximum likelihood).

    ``stop_weight`` weighs the STOP labels against the moves (a weighted mean): an episode
    has one STOP and ten or more moves, and a learner on its own longer episodes sees STOP
    rarer still."""
    log_likelihood = action_log_prob(block_log_probs, direction_log_probs, gold_actions)
    if stop_weight == 1.0:
        return -log_likelihood.mean()
    weights = torch.where(gold_actions == STOP, stop_weight, 1.0).to(log_likelihood.dtype)
    return -(weights * log_likelihood).sum() / weights.sum()


def policy_gradient_loss(block_log_probs, direction_log_probs, actions, targets, entropy_coefficient: float = 0.1,
                         blocks: torch.Tensor | None = None, form: str = "original",
                         weights: torch.Tensor | None = None) -> torch.Tensor:
    """``mean(-target·log π(a)) - λ·mean(H(block) + H(direction))`` over the given steps.

    The contextual bandit's target is each step's immediate reward (the paper treats every
    step as a separate bandit decision); REINFORCE's is the reward-to-go. ``blocks`` are the
    sampled blocks, needed by the ``"original"`` form (they differ from the action's block
    only on STOP steps). ``weights`` (summing to 1) replace the plain mean, e.g. by
    :func:`episode_weights`.
    """
    if form not in LOSS_FORMS:
        raise ValueError(f"loss form must be one of {LOSS_FORMS}; got {form!r}")
    if form == "original":
        if blocks is None:
            blocks = split_actions(actions)[0]
        log_prob = sampled_log_prob(block_log_probs, direction_log_probs, blocks, actions)
        floor = LOG_FLOOR
    else:
        log_prob = action_log_prob(block_log_probs, direction_log_probs, actions)
        floor = 0.0
    bonus = entropy(block_log_probs, floor) + entropy(direction_log_probs, floor)
    per_step = -targets.to(log_prob.dtype) * log_prob - entropy_coefficient * bonus
    return per_step.mean() if weights is None else (weights.to(per_step.dtype) * per_step).sum()


def clipped_surrogate_loss(new_log_probs: torch.Tensor, old_log_probs: torch.Tensor, advantages: torch.Tensor,
                           clip: float) -> torch.Tensor:
    """PPO's clipped objective, negated to minimise (Schulman et al. 2017):
    ``-mean(min(r·A, clip(r, 1-ε, 1+ε)·A))`` with ``r = π_new(a) / π_old(a)``.

    Once the ratio has moved ``ε`` past 1 in the direction the advantage favours, the step
    has no gradient left to push it further, so several passes over one rollout stay near
    the policy that collected it."""
    ratio = (new_log_probs - old_log_probs.detach()).exp()
    advantages = advantages.to(ratio.dtype)
    return -torch.minimum(ratio * advantages, ratio.clamp(1.0 - clip, 1.0 + clip) * advantages).mean()


def episode_weights(episodes: torch.Tensor) -> torch.Tensor:
    """Step weights under which every episode counts the same, whatever its length: each
    step weighs 1 / (its episode's steps × the number of episodes). [N], summing to 1.

    This is the original trainer's per-episode mean (docs/blocks_environment.md §6.4) carried over to an update
    that pools several episodes: a 2-step episode ended by an early STOP moves the policy
    as much as a 40-step one, where a plain mean over pooled steps gives its STOP action 1/80 of
    the update."""
    _, inverse, counts = torch.unique(episodes, return_inverse=True, return_counts=True)
    return 1.0 / (counts[inverse].double() * len(counts))


def rewards_to_go(rewards: torch.Tensor, episodes: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
    """For each decision, the sum of its own and all later rewards of its episode. [N]

    Decisions may come in any order; ``episodes``/``steps`` say which episode and step each is.
    Sorted by (episode, step), the reward-to-go is a suffix sum minus the suffix sum at the
    start of the next episode: no loop over episodes.
    """
    if len(rewards) == 0:
        return rewards.clone()
    order = torch.argsort(episodes * (int(steps.max()) + 1) + steps)
    ordered = rewards[order].double()
    suffix = torch.cat([ordered.flip(0).cumsum(0).flip(0), ordered.new_zeros(1)])
    _, counts = torch.unique_consecutive(episodes[order], return_counts=True)
    next_start = torch.repeat_interleave(counts.cumsum(0), counts)
    returns = torch.empty_like(rewards)
    returns[order] = (suffix[:-1] - suffix[next_start]).to(rewards.dtype)
    return returns
