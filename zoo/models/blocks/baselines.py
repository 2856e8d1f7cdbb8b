"""The paper's reference policies for Blocks (Table 2): Stop, Random and Demonstrations.

Like the learned policy they are :class:`~zoo.models.blocks.agent.BlocksAgent` subclasses, so
the same evaluation, CLI and hub code runs them. They have no weights; ``Demonstrations`` reads the privileged oracle path.
"""

from __future__ import annotations

import torch

from zoo.blocks.geometry import NUM_ACTIONS, STOP
from zoo.blocks.observation import BlocksObservation
from zoo.models.blocks.agent import BlocksAgent
from zoo.registry import register_model


class BlocksBaseline(BlocksAgent):
    """A fixed Blocks policy: acts without learning, and without looking at the images."""

    needs_images = False

    def _one_hot(self, actions: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.one_hot(actions, NUM_ACTIONS).float()


@register_model("blocks-stop")
class BlocksStop(BlocksBaseline):
    """Takes STOP at once: the error of leaving the board as it is."""

    def __init__(self):
        super().__init__()
        self.save_hyperparameters()

    def action_probabilities(self, observation: BlocksObservation) -> torch.Tensor:
        return self._one_hot(torch.full((len(observation),), STOP, dtype=torch.long))


@register_model("blocks-random")
class BlocksRandom(BlocksBaseline):
    """Uniform over the 81 actions at every step (seeded, so evaluations repeat exactly)."""

    def __init__(self, seed: int = 0):
        super().__init__()
        self.save_hyperparameters()
        self.generator = torch.Generator().manual_seed(seed)

    def action_probabilities(self, observation: BlocksObservation) -> torch.Tensor:
        return torch.full((len(observation), NUM_ACTIONS), 1.0 / NUM_ACTIONS)

    def score(self, observations: BlocksObservation, candidates=None) -> torch.Tensor:
        """Fresh uniform noise from the policy's own seeded stream, so that its greedy
        action is a uniform draw and evaluations repeat exactly."""
        return torch.rand(len(observations), NUM_ACTIONS, generator=self.generator)


@register_model("blocks-demonstrations")
class BlocksDemonstrations(BlocksBaseline):
    """Replays the shortest-path demonstration: the oracle's error (0.35 on dev)."""

    needs_demonstrations = True

    def __init__(self):
        super().__init__()
        self.save_hyperparameters()

    def action_probabilities(self, observation: BlocksObservation) -> torch.Tensor:
        if observation.demos is None or observation.moves_taken is None:
            raise ValueError("BlocksDemonstrations needs the privileged demos and moves_taken fields")
        step = observation.moves_taken.clamp(max=observation.demos.actions.shape[1] - 1)
        rows = torch.arange(len(observation))
        return self._one_hot(observation.demos.actions[rows, step])
