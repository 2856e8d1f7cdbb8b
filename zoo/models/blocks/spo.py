"""Scheduled policy optimisation (Xiong et al., IJCAI 2018) on the block policy.

Each training episode is a trial played by the policy itself. A trial whose final distance
error is worse than the mean of the last ``baseline_window`` trials is taken as a sign the
policy cannot yet solve such instructions, and the policy clones the expert's demonstration
of that episode; a trial at least as good as the baseline is reinforced by PPO on its own
decisions (clipped ratio, ``ppo_epochs`` passes over the rollout). A
:class:`~zoo.callbacks.scheduled_loop.ScheduledLoop` plays the trials and supplies the
demonstrations; this module learns from them. The reward is the bandit's (the paper's
shaped reward by default) and so are the network and its inputs.
"""

from __future__ import annotations

import torch

from zoo.models.blocks import losses
from zoo.models.blocks.bandit import BlocksBandit, clip_gradients
from zoo.models.blocks.experience import LabelledRollout, ScheduledTrials
from zoo.models.blocks.policy import register_objective


@register_objective("spo", "CNN-LSTM block policy trained by scheduled policy optimisation (cloning or PPO per trial); "
                           "pass the vocabulary")
class BlocksSpo(BlocksBandit):
    """The block policy trained on a ScheduledLoop's trials (:class:`ScheduledTrials`). The
    advantage of a decision is its reward, less the mean reward of the rollout's PPO decisions
    when ``reward_baseline="mean"`` (the default here).

    Args:
        vocabulary: The instruction words, ``<pad>`` and ``<unk>`` first.
        learning_rate: Adam's learning rate.
        entropy_coefficient: Weight of the heads' entropy bonus in PPO's loss.
        loss_form: ``"joint"``: PPO's ratio is the joint action's probability's.
        reward_baseline: ``"mean"`` (the advantage: the reward less the rollout's mean) or ``"none"``.
        clip: PPO's ε: the ratio is kept within [1 - clip, 1 + clip] (SPO's [0.95, 1.05]).
        ppo_epochs: Optimizer steps on each rollout.
        baseline_window: The trials the moving baseline averages.
        stop_weight: The STOP labels' weight in the cloning cross-entropy.
        **settings: :class:`BlocksBandit`'s other settings (the reward, the gradient clipping; its
            ``episodes_per_update`` and ``update_weighting`` go unused here) and the network's.
    """

    training_loop = "scheduled"
    experience_type = ScheduledTrials

    def __init__(self, vocabulary: list[str], *, learning_rate: float = 1e-4, entropy_coefficient: float = 0.01,
                 loss_form: str = "joint", reward_baseline: str = "mean", clip: float = 0.05, ppo_epochs: int = 4,
                 baseline_window: int = 100, stop_weight: float = 1.0, **settings):
        super().__init__(vocabulary, learning_rate=learning_rate, entropy_coefficient=entropy_coefficient,
                         loss_form=loss_form, reward_baseline=reward_baseline, **settings)

    def check_settings(self) -> None:
        super().check_settings()
        settings = self.hparams
        if not 0.0 < settings.clip < 1.0:
            raise ValueError(f"clip must lie in (0, 1); got {settings.clip}")
        if settings.ppo_epochs < 1:
            raise ValueError(f"ppo_epochs must be at least 1; got {settings.ppo_epochs}")
        if settings.baseline_window < 1:
            raise ValueError(f"baseline_window must be at least 1; got {settings.baseline_window}")
        if not settings.stop_weight > 0:
            raise ValueError(f"stop_weight must be positive; got {settings.stop_weight}")

    def baseline_window(self) -> int:
        """How many recent trials the moving baseline that splits cloning from PPO averages."""
        return self.hparams.baseline_window

    def update(self, trials: ScheduledTrials, optimizer, backward=None) -> torch.Tensor:
        """``ppo_epochs`` clipped optimizer steps on the trials: each step's loss is PPO's on
        the decisions of the trials that met the baseline plus the cloning cross-entropy on
        the demonstrations of those that did not, each weighted by its share of the trials.
        ``backward`` is the Trainer's ``manual_backward`` inside Lightning. The mean loss."""
        backward = backward or (lambda loss: loss.backward())
        rollout, worse, demonstrations = trials.rollout, trials.worse, trials.demonstrations
        ppo_rows = (~worse)[rollout.episodes].nonzero().squeeze(1)
        cloned_share = float(worse.float().mean())
        if len(ppo_rows):
            actions = rollout.actions[ppo_rows].to(self.device)
            advantages = self.rollout_targets(rollout, ppo_rows).to(self.device)
            if self.hparams.reward_baseline == "mean":
                advantages = advantages - advantages.mean()
        old = None  # the log-probabilities of the policy that played the trials: the first pass's
        step_losses = []
        for _ in range(self.hparams.ppo_epochs):
            # Each term is backpropagated before the next forward pass: the image encoder
            # gathers its stacks into buffers it reuses from one call to the next.
            optimizer.zero_grad()
            loss = torch.zeros((), device=self.device)
            if len(ppo_rows):
                block, direction = self.rollout_heads(rollout, ppo_rows)
                new = losses.action_log_prob(block, direction, actions)
                if old is None:  # no step has been taken yet, so this pass is the playing policy
                    old = new.detach()
                bonus = (losses.entropy(block) + losses.entropy(direction)).mean()
                ppo = losses.clipped_surrogate_loss(new, old, advantages, self.hparams.clip)
                term = (1.0 - cloned_share) * (ppo - self.hparams.entropy_coefficient * bonus)
                backward(term)
                loss = loss + term.detach()
            if demonstrations is not None:
                term = cloned_share * self.cloning_loss(demonstrations)
                backward(term)
                loss = loss + term.detach()
            clip_gradients(self.parameters(), self.hparams.gradient_clip_val, self.hparams.gradient_clip_algorithm)
            optimizer.step()
            step_losses.append(loss)
        return torch.stack(step_losses).mean()

    def cloning_loss(self, demonstrations: LabelledRollout) -> torch.Tensor:
        """Cross-entropy of the expert's actions along its own path (an ExpertLoop rollout
        with β = 1: the demonstration's states)."""
        rows = torch.arange(len(demonstrations.episodes))
        block, direction = self.rollout_heads(demonstrations, rows)
        return losses.supervised_loss(block, direction, demonstrations.labels.to(self.device),
                                      self.hparams.stop_weight)
