"""DAgger (Ross, Gordon & Bagnell 2011): imitation of the expert on the policy's own states.

Supervised learning sees the expert only on the expert's states; a policy that leaves them
(a wrong block, a detour, a late STOP) was never told what to do there (exposure bias). Here
an :class:`~zoo.callbacks.expert_loop.ExpertLoop` rolls out a mixture of the expert and the
policy, labels every visited state with the expert's action (the shortest-path expert reads
the board, as the paper's instrumented training environment allows) and hands over
minibatches of its replay of the newest labelled decisions; this module minimises the
cross-entropy of the labels, one optimizer step per minibatch. The network and its inputs
are the paper's (:class:`~zoo.models.blocks.policy.BlocksPolicy`): at test time the policy
still sees only the images, the instruction and its previous action.
"""

from __future__ import annotations

import torch

from zoo.models.blocks import losses
from zoo.models.blocks.bandit import CLIP_ALGORITHMS, clip_gradients
from zoo.models.blocks.experience import ExpertLabels, LabelMinibatch
from zoo.models.blocks.policy import BlocksPolicy, register_objective


@register_objective("dagger", "CNN-LSTM block policy trained by DAgger on the shortest-path expert's labels; pass the vocabulary")
class BlocksDagger(BlocksPolicy):
    """The block policy trained on an ExpertLoop's :class:`ExpertLabels`: replay minibatches of expert labels.
    Start it from a supervised policy with ``to_objective(BlocksDagger, ...)``. ``beta_start``,
    ``beta_decay`` and ``beta_end`` are its schedule: the expert's share of the actions in each
    rollout (an ExpertLoop's), multiplied by ``beta_decay`` after every rollout down to ``beta_end``.

    Args:
        vocabulary: The instruction words, ``<pad>`` and ``<unk>`` first.
        gradient_clip_val: The norm it clips its gradients at, at each of its own steps; None: no clipping.
        gradient_clip_algorithm: ``"per_parameter"`` (each gradient on its own) or ``"global"``.
        beta_start: The expert's share of the actions in the first rollout.
        beta_decay: Beta is multiplied by this after every rollout (0.99: 0.37 after 100 rollouts).
        beta_end: The least share beta falls to.
        stop_weight: The STOP labels' weight in the cross-entropy against the moves'.
        **settings: :class:`~zoo.models.blocks.policy.BlocksPolicy`'s (the learning rate, the network's settings).
    """

    data_mode = "episodes"
    training_loop = "expert"
    experience_type = ExpertLabels

    def __init__(self, vocabulary: list[str], *, gradient_clip_val: float | None = 5.0,
                 gradient_clip_algorithm: str = "per_parameter", beta_start: float = 1.0, beta_decay: float = 0.99,
                 beta_end: float = 0.0, stop_weight: float = 1.0, **settings):
        super().__init__(vocabulary, **settings)

    def check_settings(self) -> None:
        if self.hparams.gradient_clip_algorithm not in CLIP_ALGORITHMS:
            raise ValueError(f"gradient_clip_algorithm must be one of {CLIP_ALGORITHMS}; "
                             f"got {self.hparams.gradient_clip_algorithm!r}")
        if not self.hparams.stop_weight > 0:
            raise ValueError(f"stop_weight must be positive; got {self.hparams.stop_weight}")

    def beta_schedule(self) -> dict[str, float]:
        """The expert's share of the actions over the rollouts (``beta_start``, ``beta_decay``,
        ``beta_end``), for the loop that plays them."""
        return {key: self.hparams[key] for key in ("beta_start", "beta_decay", "beta_end")}

    @property
    def automatic_optimization(self) -> bool:
        """Several optimizer steps per rollout (one per minibatch), so it steps itself."""
        return False

    def training_step(self, batch: dict, batch_idx: int) -> torch.Tensor:
        loss = self.update(self.take_experience(), self.optimizers(), self.manual_backward)
        self.log("train/loss", loss, prog_bar=True, batch_size=len(batch["episodes"]))
        return loss

    def update(self, labels: ExpertLabels, optimizer, backward=None) -> torch.Tensor:
        """One clipped optimizer step per minibatch on the labels' cross-entropy; the mean loss.
        ``backward`` is the Trainer's ``manual_backward`` inside Lightning."""
        backward = backward or (lambda loss: loss.backward())
        step_losses, correct, seen = [], 0, 0
        for minibatch in labels.minibatches:
            block, direction = self.label_heads(minibatch)
            targets = minibatch.labels.to(self.device)
            loss = losses.supervised_loss(block, direction, targets, self.hparams.stop_weight)
            optimizer.zero_grad()
            backward(loss)
            clip_gradients(self.parameters(), self.hparams.gradient_clip_val, self.hparams.gradient_clip_algorithm)
            optimizer.step()
            step_losses.append(loss.detach())
            correct += int((self.joint_log_probs(block, direction).argmax(-1) == targets).sum())
            seen += len(targets)
        if not step_losses:
            raise RuntimeError("no labelled minibatches to learn from")
        if self._trainer is not None:
            self.log("train/accuracy", correct / seen, batch_size=seen)
        return torch.stack(step_losses).mean()

    def label_heads(self, minibatch: LabelMinibatch) -> tuple[torch.Tensor, torch.Tensor]:
        """Block and direction log-probabilities of a replay minibatch's decisions, from the
        stored frames (:meth:`ImageEncoder.from_frames` gathers each stack straight from them)."""
        device = self.device
        images = self.image.from_frames(minibatch.frames.to(device), minibatch.index.to(device),
                                        minibatch.frame_sums.to(device))
        text = self.instruction_features(minibatch.tokens.to(device), minibatch.lengths)
        return self(images, None, None, minibatch.previous.to(device), text)
