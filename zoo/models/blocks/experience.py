"""The experience each Blocks objective learns from, one typed record per kind.

An objective that learns from experience is half of a pair: a collector (a training-loop
callback in ``zoo.callbacks``) plays the policy in the simulator and returns one of these
records from ``collect(policy, examples)``; the objective takes it in one method,
``update(experience, optimizer, backward=None) -> loss``. Inside a Trainer the callback hands
the record to the module before each batch (:meth:`BlocksPolicy.set_experience`); outside one
(benchmarks, studies, tests) the same two calls train it. Shapes below: B episodes, T+1 frames
of each (the board after 0..T actions), N decisions, K+1 frames in an image stack.

The records are frozen: a field is replaced, never reassigned, so what the collector returned
is what the objective learned from.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Rollout:
    """Every decision of B episodes played in the simulator, as ``EpisodeRunner.record`` logs them.

    Attributes:
        frames: uint8 [T+1, B, 3, H, W], the board after t actions of each episode.
        frame_sums: float64 [T+1, B, 2], each frame's pixel sum and sum of squares (the image
            encoder's standardisation, computed once per frame).
        steps: [N] the step t of each decision.
        episodes: [N] the episode b of each decision.
        actions: [N] the action taken (0..80; 80 is STOP).
        previous: [N] the action taken before it (80 at an episode's start).
        rewards: float64 [N] the immediate reward (zeros when the rollout was not scored).
        done: bool [N] whether the decision ended its episode.
        tokens: [B, L] the instructions' token ids, padded.
        lengths: [B] the instructions' lengths.
    """

    frames: torch.Tensor
    frame_sums: torch.Tensor
    steps: torch.Tensor
    episodes: torch.Tensor
    actions: torch.Tensor
    previous: torch.Tensor
    rewards: torch.Tensor
    done: torch.Tensor
    tokens: torch.Tensor
    lengths: torch.Tensor


@dataclass(frozen=True)
class SampledRollout(Rollout):
    """The bandit's experience (``ContextualBanditLoop.collect``): a rollout whose actions were
    sampled from the policy, scored by the objective's reward.

    Attributes:
        blocks: [N] the block the policy sampled at each decision (also on STOP, whose action
            names no block): the ``"original"`` loss form's block term.
        returns: float64 [N] the reward-to-go of each decision (REINFORCE's target).
    """

    blocks: torch.Tensor
    returns: torch.Tensor


@dataclass(frozen=True)
class LabelledRollout(Rollout):
    """A rollout of a β-mixture of the expert and the policy, every visited state labelled with
    the expert's action (``ExpertLoop.play``); with β = 1, an expert demonstration.

    Attributes:
        labels: [N] the shortest-path expert's action at each decision's state.
        expert_acted: bool [N] whether the expert's action was the one taken.
    """

    labels: torch.Tensor
    expert_acted: torch.Tensor


@dataclass(frozen=True)
class LabelMinibatch:
    """Decisions drawn from an ``ExpertReplay``: each one's image stack is gathered from the
    replay's stored frames by ``index``.

    Attributes:
        frames: uint8 [C, 3, H, W], the replay's whole frame store (C slots; not copied).
        frame_sums: float64 [C, 2], the stored frames' pixel sums.
        index: [M, K+1] the slots of each decision's stack, oldest first (-1: an all-zero frame
            before its episode's start).
        previous: [M] the action before each decision.
        labels: [M] the expert's action at each decision.
        tokens: [M, L] each decision's instruction, padded to the longest drawn.
        lengths: [M] the instructions' lengths.
    """

    frames: torch.Tensor
    frame_sums: torch.Tensor
    index: torch.Tensor
    previous: torch.Tensor
    labels: torch.Tensor
    tokens: torch.Tensor
    lengths: torch.Tensor


@dataclass(frozen=True)
class ExpertLabels:
    """DAgger's experience (``ExpertLoop.collect``): the minibatches drawn from the replay after
    one rollout, one optimizer step each.

    Attributes:
        minibatches: the replay minibatches, in the order they are learned from.
        rollout: the labelled rollout played before they were drawn (its decisions are in the
            replay already; kept for what it says about the episodes, such as their lengths).
    """

    minibatches: tuple[LabelMinibatch, ...]
    rollout: LabelledRollout


@dataclass(frozen=True)
class ScheduledTrials:
    """SPO's experience (``ScheduledLoop.collect``): the policy's trials and the expert's
    demonstrations of those worse than the moving baseline.

    Attributes:
        rollout: the trials, sampled from the policy, with their rewards.
        worse: bool [B] whether each trial ended further from its goal than the baseline.
        demonstrations: the expert's demonstrations of the worse trials' episodes (their own
            B' episodes, in order); None when no trial was worse.
    """

    rollout: SampledRollout
    worse: torch.Tensor
    demonstrations: LabelledRollout | None


@dataclass(frozen=True)
class Transitions:
    """DQN's experience (``DQNLoop.collect``): transitions drawn from the replay memory, with the
    target network's values of the states they led to.

    Attributes:
        stacks: uint8 [M, K+1, 3, H, W] the image stack before each action.
        next_stacks: uint8 [M, K+1, 3, H, W] the image stack after it.
        tokens: [M, L] each transition's instruction, padded to the longest drawn.
        lengths: [M] the instructions' lengths.
        previous: [M] the action before each one.
        actions: [M] the action taken.
        rewards: float64 [M] its reward.
        done: bool [M] whether it ended its episode.
        next_q: float32 [M] max over actions of the target network's Q-values after it
            (the bootstrap of ``r + γ·(1 - done)·next_q``).
    """

    stacks: torch.Tensor
    next_stacks: torch.Tensor
    tokens: torch.Tensor
    lengths: torch.Tensor
    previous: torch.Tensor
    actions: torch.Tensor
    rewards: torch.Tensor
    done: torch.Tensor
    next_q: torch.Tensor


Experience = SampledRollout | ExpertLabels | ScheduledTrials | Transitions
"""What a collector returns and an objective's ``update`` takes."""
