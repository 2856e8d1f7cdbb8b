"""What a Blocks policy sees at one step of a batch of episodes."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from zoo.blocks.board import BoardBatch
from zoo.blocks.demos import DemoBatch


@dataclass
class BlocksObservation:
    """The agent's inputs, plus privileged fields that only oracle baselines may read.

    Learned policies use ``instructions`` (or their pre-tokenised ``tokens``/``lengths``),
    ``images`` (the standardised K=4 history stack, [B, 15, 120, 120]) and
    ``previous_action`` (-1 at the start of an episode). ``boards``, ``positions``,
    ``moves_taken`` and ``demos`` are the simulator's state, for baselines such as the
    demonstration replayer and for the oracle planner.
    """

    instructions: list[str]
    previous_action: torch.Tensor
    images: torch.Tensor | None = None
    tokens: torch.Tensor | None = None
    lengths: torch.Tensor | None = None
    boards: BoardBatch | None = None
    positions: torch.Tensor | None = None
    moves_taken: torch.Tensor | None = None
    demos: DemoBatch | None = None

    def __len__(self) -> int:
        return len(self.instructions)
