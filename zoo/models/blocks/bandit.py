"""The contextual bandit with reward shaping (the paper's method, Table 2 "Our approach").

Every step of a rollout is a separate bandit decision, its target the step's shaped reward.
"""

from __future__ import annotations

import torch

from zoo.blocks.reward import REWARD_VARIANTS, RewardConfig
from zoo.models.blocks import losses
from zoo.models.blocks.experience import Rollout, SampledRollout
from zoo.models.blocks.policy import BlocksPolicy, register_objective

CLIP_ALGORITHMS = ("per_parameter", "global")
UPDATE_WEIGHTINGS = ("steps", "episodes")
REWARD_BASELINES = ("none", "mean")


def clip_gradients(parameters, max_norm: float | None, algorithm: str = "per_parameter") -> None:
    """Clip gradients at ``max_norm``: each parameter's gradient on its own
    (``"per_parameter"``, the original's ``tf.clip_by_norm`` on every gradient) or all of
    them together (``"global"``, ``torch.nn.utils.clip_grad_norm_``)."""
    if not max_norm:
        return
    parameters = [p for p in parameters if p.grad is not None]
    if algorithm == "global":
        torch.nn.utils.clip_grad_norm_(parameters, max_norm)
        return
    norms = torch._foreach_norm([p.grad for p in parameters])
    scales = [max_norm / torch.clamp(norm, min=max_norm) for norm in norms]
    torch._foreach_mul_([p.grad for p in parameters], scales)


@register_objective("bandit", "CNN-LSTM block policy trained as a contextual bandit with shaped rewards; pass the vocabulary")
class BlocksBandit(BlocksPolicy):
    """Learns from its own rollouts (a ContextualBanditLoop's :class:`SampledRollout`): a
    policy-gradient step on each decision's immediate reward, with an entropy bonus. The defaults are the released
    policy's (the paper's settings, but for ``episodes_per_update``).

    Args:
        vocabulary: The instruction words, ``<pad>`` and ``<unk>`` first.
        learning_rate: Adam's learning rate (the original trainer's 2.5e-4,
            docs/blocks_environment.md §6.4).
        entropy_coefficient: Weight of the heads' entropy bonus in the loss.
        loss_form: ``"original"`` (log p_block + log p_direction of the sampled pair, +1e-6 inside
            the logs, as the original) or ``"joint"`` (the log-probability of the joint action).
        episodes_per_update: One Adam step per this many episodes of a rollout. The original's is 1
            (docs/blocks_environment.md §6.4), which learned fastest over 2,000 episodes but
            collapsed over a full epoch here (seed 0: dev 6.87 after epoch 1, STOP never taken); 4,
            as the released policy, until that is understood.
        update_weighting: ``"steps"`` (the mean over the update's pooled steps) or ``"episodes"``
            (each episode's mean, averaged: the original's per-episode mean; the same when
            ``episodes_per_update`` is 1).
        reward_baseline: ``"none"`` (the paper's: the raw reward) or ``"mean"`` (each update's mean
            target subtracted).
        gradient_clip_val: The norm the policy clips its gradients at, at each of its own steps
            (it optimises by hand, so the Trainer's clipping does not apply); None: no clipping.
        gradient_clip_algorithm: ``"per_parameter"`` (each gradient on its own: the original's
            ``clip_by_norm``) or ``"global"`` (all of them together).
        reward: The reward its rollouts are scored by: ``"problem"``, ``"f1"``, ``"f2"``,
            ``"shaped"`` (the paper's) or ``"distance"`` (:class:`~zoo.blocks.reward.RewardConfig`'s default).
        failure_penalty: The reward of a failed move (the paper's -1; docs/blocks_environment.md §8.3;
            :class:`~zoo.blocks.reward.RewardConfig`'s default).
        **network: The network's settings (:class:`~zoo.models.blocks.network_config.BlocksNetworkConfig`).
    """

    data_mode = "episodes"
    training_loop = "contextual_bandit"
    experience_type = SampledRollout

    def __init__(self, vocabulary: list[str], *, learning_rate: float = 2.5e-4, entropy_coefficient: float = 0.1,
                 loss_form: str = "original", episodes_per_update: int = 4, update_weighting: str = "steps",
                 reward_baseline: str = "none", gradient_clip_val: float | None = 5.0,
                 gradient_clip_algorithm: str = "per_parameter", reward: str = RewardConfig.variant,
                 failure_penalty: float = RewardConfig.failure_penalty, **network):
        super().__init__(vocabulary, learning_rate=learning_rate, **network)

    def check_settings(self) -> None:
        settings = self.hparams
        if settings.loss_form not in losses.LOSS_FORMS:
            raise ValueError(f"loss_form must be one of {losses.LOSS_FORMS}; got {settings.loss_form!r}")
        if settings.gradient_clip_algorithm not in CLIP_ALGORITHMS:
            raise ValueError(f"gradient_clip_algorithm must be one of {CLIP_ALGORITHMS}; "
                             f"got {settings.gradient_clip_algorithm!r}")
        if settings.update_weighting not in UPDATE_WEIGHTINGS:
            raise ValueError(f"update_weighting must be one of {UPDATE_WEIGHTINGS}; got {settings.update_weighting!r}")
        if settings.reward_baseline not in REWARD_BASELINES:
            raise ValueError(f"reward_baseline must be one of {REWARD_BASELINES}; got {settings.reward_baseline!r}")
        if settings.reward not in REWARD_VARIANTS:
            raise ValueError(f"reward must be one of {REWARD_VARIANTS}; got {settings.reward!r}")
        if settings.episodes_per_update < 1:
            raise ValueError(f"episodes_per_update must be at least 1; got {settings.episodes_per_update}")

    def reward_config(self) -> RewardConfig:
        """The reward its rollouts are scored with (the training loop's, handed over by the objective)."""
        return RewardConfig(self.hparams.reward, failure_penalty=self.hparams.failure_penalty)

    @property
    def automatic_optimization(self) -> bool:
        """Learning from rollouts makes several optimizer steps per batch (one per
        ``episodes_per_update`` episodes of the rollout), so it steps the optimizer itself."""
        return False

    def rollout_targets(self, rollout: SampledRollout, rows: torch.Tensor) -> torch.Tensor:
        """What each decision's log-likelihood is weighted by: its immediate reward."""
        return rollout.rewards[rows]

    def training_step(self, batch: dict, batch_idx: int) -> torch.Tensor:
        loss = self.update(self.take_experience(), self.optimizers(), self.manual_backward)
        self.log("train/loss", loss, prog_bar=True, batch_size=len(batch["episodes"]))
        return loss

    def update(self, rollout: SampledRollout, optimizer, backward=None) -> torch.Tensor:
        """The original trainers' schedule (docs/blocks_environment.md §6.4): one optimizer step per
        ``episodes_per_update`` episodes of a rollout, on the mean loss over their steps
        (``update_weighting="steps"``) or the mean of their episodes' means (``"episodes"``:
        the original's per-episode mean, the same thing when one episode makes an update).

        The rollout's episodes were all sampled from the policy as it was before the first
        of these steps, so the k-th step learns from experience k-1 steps old (the policy lag
        of rolling out several episodes at once; with ``episodes_per_update`` equal to the
        rollout's size there is one step and no lag). ``backward`` is the Trainer's
        ``manual_backward`` inside Lightning, ``Tensor.backward`` outside. Returns the mean loss.
        """
        backward = backward or (lambda loss: loss.backward())
        episodes = rollout.episodes
        if episodes.numel() == 0:
            raise RuntimeError("the rollout recorded no decisions")
        n_episodes = int(episodes.max()) + 1
        per_update = self.hparams.episodes_per_update
        step_losses = []
        for first in range(0, n_episodes, per_update):
            rows = ((episodes >= first) & (episodes < first + per_update)).nonzero().squeeze(1)
            if rows.numel() == 0:
                continue
            loss = self.rollout_loss(rollout, rows)
            optimizer.zero_grad()
            backward(loss)
            clip_gradients(self.parameters(), self.hparams.gradient_clip_val, self.hparams.gradient_clip_algorithm)
            optimizer.step()
            step_losses.append(loss.detach())
        return torch.stack(step_losses).mean()

    def rollout_loss(self, rollout: SampledRollout, rows: torch.Tensor | None = None) -> torch.Tensor:
        """The policy-gradient loss on the decisions ``rows`` (default: all) of a rollout a
        ContextualBanditLoop collected, weighted by :meth:`rollout_targets`."""
        if rows is None:
            rows = torch.arange(len(rollout.episodes))
        block, direction = self.rollout_heads(rollout, rows)
        actions = rollout.actions[rows].to(self.device)
        blocks = rollout.blocks[rows].to(self.device)
        targets = self.rollout_targets(rollout, rows).to(self.device)
        if self.hparams.reward_baseline == "mean":
            # The update's mean target subtracted (not the paper's): the expected gradient is
            # unchanged, only its variance and the push on unsampled actions differ. It does
            # not keep STOP alive (README, "Why STOP dies").
            targets = targets - targets.mean()
        weights = None
        if self.hparams.update_weighting == "episodes":
            weights = losses.episode_weights(rollout.episodes[rows]).to(self.device)
        return losses.policy_gradient_loss(block, direction, actions, targets, self.hparams.entropy_coefficient,
                                           blocks=blocks, form=self.hparams.loss_form, weights=weights)

    def rollout_heads(self, rollout: Rollout, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Block and direction log-probabilities ``[N, 20]``, ``[N, 5]`` of the decisions ``rows``
        of a rollout, computed from its recorded frames as an update computes them."""
        unique, inverse = torch.unique(rollout.episodes[rows], return_inverse=True)
        images = self._embed_rollout_frames(rollout.frames, rollout.steps[rows], unique, inverse, rollout.frame_sums)
        # One LSTM pass per episode, not per step: every step of an episode has its instruction.
        lengths = rollout.lengths[unique.cpu()]
        tokens = rollout.tokens[unique][:, : int(lengths.max())]
        text = self.instruction_features(tokens, lengths)[inverse.to(self.device)]
        return self(images.to(self.device), None, None, rollout.previous[rows].to(self.device), text)

    def _embed_rollout_frames(self, frames: torch.Tensor, steps: torch.Tensor, unique: torch.Tensor,
                              inverse: torch.Tensor, frame_sums: torch.Tensor | None = None) -> torch.Tensor:
        """Image embeddings [N, image_dim] of the contexts ``(steps[i], unique[inverse[i]])``
        of a rollout's uint8 ``frames`` [T+1, B, 3, H, W], through
        :meth:`ImageEncoder.from_frames`: indexed where they lie when they are on the
        policy's device (no copy), else just these episodes' frames moved there."""
        sums = None
        if frames.device == self.device:
            flat, width, column = frames.flatten(0, 1), frames.shape[1], unique[inverse]
            if frame_sums is not None:
                sums = frame_sums.flatten(0, 1)
        else:
            length = int(steps.max()) + 1  # frames 0..last step are the only ones seen
            chosen = frames[:length, unique.to(frames.device)]  # [T, U, 3, H, W]
            flat, width, column = chosen.flatten(0, 1).to(self.device), len(unique), inverse
            if frame_sums is not None:
                sums = frame_sums[:length, unique.to(frame_sums.device)].flatten(0, 1).to(self.device)
        slots = torch.arange(-self.history_slots, 1, device=steps.device)
        times = steps[:, None] + slots[None, :]  # [N, K+1]
        index = torch.where(times >= 0, times * width + column.to(steps.device)[:, None], -1)
        return self.image.from_frames(flat, index.to(self.device), sums)
