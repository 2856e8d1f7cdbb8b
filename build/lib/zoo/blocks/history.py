"""Rebuild the agent's image stacks from logged frames, for learning from rollouts."""

from __future__ import annotations

import torch


def stacks_from_frames(frames: torch.Tensor, steps: torch.Tensor, episodes: torch.Tensor, history: int = 4) -> torch.Tensor:
    """Standardised stacks [N, 3·(history+1), H, W] for the contexts ``(steps[i], episodes[i])``.

    ``frames[t, b]`` (uint8 [T+1, B, 3, H, W]) is episode ``b``'s board after ``t`` actions.
    The stack at step t holds frames t-history..t, oldest first, with zeros before the
    episode's start: exactly what :class:`zoo.blocks.render.HistoryStack` showed the policy.
    Storing uint8 frames instead of stacks keeps a 40-step rollout of 32 boards at 55 MB.
    The gather happens in uint8 and the float stack is built and standardised in place:
    at a thousand contexts, fresh float temporaries would cost more than the arithmetic.
    """
    return standardize_stacks(raw_stacks(frames, steps, episodes, history))


def raw_stacks(frames: torch.Tensor, steps: torch.Tensor, episodes: torch.Tensor, history: int = 4) -> torch.Tensor:
    """The uint8 stacks [N, 3·(history+1), H, W] before scaling: compact enough to keep in a
    replay memory."""
    offsets = torch.arange(-history, 1, device=steps.device)
    times = steps[:, None] + offsets[None, :]  # [N, history+1]
    picked = frames[times.clamp(min=0), episodes[:, None]]  # uint8 [N, K+1, 3, H, W]
    picked[times < 0] = 0
    return picked.flatten(1, 2)


def standardize_stacks(stacks: torch.Tensor) -> torch.Tensor:
    """uint8 stacks -> the standardised float32 the policy reads, built in one buffer."""
    from zoo.blocks.render import standardize

    scaled = torch.empty(stacks.shape, dtype=torch.float32, device=stacks.device).copy_(stacks).mul_(1.0 / 255.0)
    return standardize(scaled, inplace=True)
