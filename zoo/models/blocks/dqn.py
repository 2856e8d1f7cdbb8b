"""Deep Q-learning (the paper's Table 2 DQN baseline): an 81-way Q head on the same network."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from zoo.blocks.geometry import NUM_ACTIONS
from zoo.blocks.observation import BlocksObservation
from zoo.blocks.history import standardize_stacks
from zoo.blocks.reward import RewardConfig
from zoo.models.blocks.experience import Transitions
from zoo.models.blocks.policy import BlocksPolicy, register_objective


@register_objective("dqn", "CNN-LSTM block policy with an 81-way Q head (the DQN baseline); pass the vocabulary")
class BlocksDQN(BlocksPolicy):
    """Q-values of the 81 actions, learned from a DQNLoop's replay (:class:`Transitions`) by the
    Huber loss against ``r + discount·max Q_target(s', ·)``. As a policy it is greedy in its Q-values: its action
    probabilities are one-hot on the argmax and ``score`` is the Q-values themselves.

    Args:
        vocabulary: The instruction words, ``<pad>`` and ``<unk>`` first.
        learning_rate: Adam's learning rate (the bandit's 2.5e-4, with which docs/blocks.md's DQN
            row was trained).
        discount: γ of the targets ``r + γ·max Q_target(s', ·)``.
        reward: The reward its transitions are scored by (:class:`~zoo.models.blocks.bandit.BlocksBandit`'s).
        failure_penalty: The reward of a failed move.
        **network: The network's settings (:class:`~zoo.models.blocks.network_config.BlocksNetworkConfig`).
    """

    data_mode = "episodes"
    training_loop = "dqn"
    experience_type = Transitions

    def __init__(self, vocabulary: list[str], *, learning_rate: float = 2.5e-4, discount: float = 0.9,
                 reward: str = RewardConfig.variant, failure_penalty: float = RewardConfig.failure_penalty, **network):
        super().__init__(vocabulary, learning_rate=learning_rate, **network)

    def build_heads(self, hidden_dim: int) -> None:
        self.q_head = nn.Linear(hidden_dim, NUM_ACTIONS)

    def reward_config(self) -> RewardConfig:
        """The reward its transitions are scored with (the training loop's, handed over by the objective)."""
        return RewardConfig(self.hparams.reward, failure_penalty=self.hparams.failure_penalty)

    def q_values(self, images, tokens, lengths, previous_action, text=None) -> torch.Tensor:
        """Q-value of each of the 81 actions [B, 81]."""
        return self.q_head(self.features(images, tokens, lengths, previous_action, text))

    def score(self, observations: BlocksObservation, candidates=None) -> torch.Tensor:
        """The Q-values; the argmax is the greedy action."""
        return self.q_head(self.observed_features(observations))

    def action_probabilities(self, observation: BlocksObservation) -> torch.Tensor:
        return F.one_hot(self.score(observation).argmax(dim=-1), NUM_ACTIONS).float()

    @torch.no_grad()
    def act(self, observation: BlocksObservation, generator: torch.Generator | None = None) -> torch.Tensor:
        return super(BlocksPolicy, self).act(observation, generator)

    def frozen_copy(self, state: dict | None = None) -> "BlocksDQN":
        """A new network with this one's settings and ``state`` (default: its weights), frozen and
        in eval mode on its device: the target network of the bootstrapped targets (a deepcopy
        would drag the Trainer along)."""
        target = type(self)(**self.hparams)
        target.load_state_dict(state if state is not None else self.state_dict())
        return target.to(self.device).eval().requires_grad_(False)

    def training_step(self, batch: dict, batch_idx: int) -> torch.Tensor:
        """The TD loss; the Trainer makes the step (automatic optimization, its gradient clipping)."""
        loss = self.temporal_difference_loss(self.take_experience())
        self.log("train/loss", loss, prog_bar=True, batch_size=len(batch["episodes"]))
        return loss

    def update(self, replay: Transitions, optimizer, backward=None) -> torch.Tensor:
        """One optimizer step on :meth:`temporal_difference_loss`, the step a Trainer makes from
        :meth:`training_step` (less the Trainer's gradient clipping). ``backward``: the Trainer's
        ``manual_backward`` inside Lightning, ``Tensor.backward`` outside. Returns the loss."""
        backward = backward or (lambda loss: loss.backward())
        loss = self.temporal_difference_loss(replay)
        optimizer.zero_grad()
        backward(loss)
        optimizer.step()
        return loss.detach()

    def temporal_difference_loss(self, replay: Transitions) -> torch.Tensor:
        """Huber loss between Q(s, a) and the targets ``r + discount·(1 - done)·max Q_target(s', ·)``."""
        targets = replay.rewards.float() + self.hparams.discount * (~replay.done).float() * replay.next_q
        q = self.q_values(standardize_stacks(replay.stacks).to(self.device), replay.tokens.to(self.device),
                          replay.lengths, replay.previous.to(self.device))
        chosen = q.gather(1, replay.actions.to(self.device)[:, None]).squeeze(1)
        return F.smooth_l1_loss(chosen, targets.to(chosen))

    def validation_step(self, batch: dict, batch_idx: int) -> None:
        """Q-values have no likelihood; the rollout metrics still validate a DQN."""
