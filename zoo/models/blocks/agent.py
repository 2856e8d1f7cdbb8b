"""``BlocksAgent``: what every Blocks policy means, in one place.

A Blocks policy chooses one of the 81 actions (20 blocks × 4 directions, then STOP) from an
observation of a batch of episodes. Every policy in the zoo, learned, baseline or ensemble,
answers the same three questions, so evaluation, the CLI, ensembles and the training loops
never ask which class they hold:

* ``action_probabilities(observation)`` -> [B, 81], each row a distribution: what the policy
  would do, the quantity the paper's ensembles average (Table 3);
* ``act(observation, generator=None)`` -> [B] actions: the greedy choice without a generator
  (the paper's test time), a draw from the policy with one;
* ``score(observation)`` -> [B, 81], higher is better: the probabilities, unless a policy ranks
  by something else (a DQN head's Q-values), so ``argmax(score)`` is always the greedy action.
"""

from __future__ import annotations

import torch

from zoo.blocks.observation import BlocksObservation
from zoo.grounded import Grounded
from zoo.protocols import Policy


class BlocksAgent(Grounded, Policy):
    """Base of every Blocks policy; subclasses implement :meth:`action_probabilities` and
    declare what they read (:class:`~zoo.protocols.Policy`'s flags)."""

    domain = "blocks"
    selection_metric = "tuning/mean_error"
    """The figure that picks the epoch a training run exports (lower is better): the task error of
    greedy rollouts on the tuning set."""

    def action_probabilities(self, observation: BlocksObservation) -> torch.Tensor:
        """A distribution over the 81 actions for each episode of ``observation``, [B, 81]."""
        raise NotImplementedError(f"{type(self).__name__} does not implement action_probabilities()")

    def score(self, observations: BlocksObservation, candidates=None) -> torch.Tensor:
        return self.action_probabilities(observations)

    @torch.no_grad()
    def act(self, observation: BlocksObservation, generator: torch.Generator | None = None) -> torch.Tensor:
        """Actions [B]: the argmax of :meth:`score`, or with ``generator`` a sample of
        :meth:`action_probabilities`."""
        if generator is None:
            return self.score(observation).argmax(dim=-1)
        return torch.multinomial(self.action_probabilities(observation).float().cpu(), 1, generator=generator).squeeze(1)
