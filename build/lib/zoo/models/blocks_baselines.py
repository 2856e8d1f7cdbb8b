"""The paper's reference policies for Blocks (Table 2): Stop, Random and Demonstrations.

They are ``Grounded`` models like the learned policy, so the same evaluation, CLI and hub
code runs them. They have no weights; ``Demonstrations`` reads the privileged oracle path.
"""

from __future__ import annotations

import torch

from zoo.blocks.geometry import NUM_ACTIONS, STOP
from zoo.blocks.observation import BlocksObservation
from zoo.grounded import Grounded
from zoo.registry import register_model


class BlocksBaseline(Grounded):
    domain = "blocks"
    """A fixed Blocks policy: scores the 81 actions without learning."""

    needs_images = False
    needs_demonstrations = False

    def _one_hot(self, actions: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.one_hot(actions, NUM_ACTIONS).float()


@register_model("blocks-stop")
class StopPolicy(BlocksBaseline):
    """Takes STOP at once: the error of leaving the board as it is."""

    def __init__(self):
        super().__init__()
        self.save_hyperparameters()

    def score(self, observations: BlocksObservation, candidates=None) -> torch.Tensor:
        return self._one_hot(torch.full((len(observations),), STOP, dtype=torch.long))


@register_model("blocks-random")
class RandomPolicy(BlocksBaseline):
    """Uniform over the 81 actions at every step (seeded, so evaluations repeat exactly)."""

    def __init__(self, seed: int = 0):
        super().__init__()
        self.save_hyperparameters()
        self.generator = torch.Generator().manual_seed(seed)

    def score(self, observations: BlocksObservation, candidates=None) -> torch.Tensor:
        return torch.rand(len(observations), NUM_ACTIONS, generator=self.generator)


@register_model("blocks-demonstrations")
class DemonstrationPolicy(BlocksBaseline):
    """Replays the shortest-path demonstration: the oracle's error (0.35 on dev)."""

    needs_demonstrations = True

    def __init__(self):
        super().__init__()
        self.save_hyperparameters()

    def score(self, observations: BlocksObservation, candidates=None) -> torch.Tensor:
        if observations.demos is None or observations.moves_taken is None:
            raise ValueError("DemonstrationPolicy needs the privileged demos and moves_taken fields")
        step = observations.moves_taken.clamp(max=observations.demos.actions.shape[1] - 1)
        rows = torch.arange(len(observations))
        return self._one_hot(observations.demos.actions[rows, step])
