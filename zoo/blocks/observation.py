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
    instruction_features: torch.Tensor | None = None
    """A policy's own per-episode encoding of each instruction (see EpisodeRunner's
    ``featurize``): computed once per episode instead of at every step."""

    def __len__(self) -> int:
        return len(self.instructions)

    def select(self, rows: torch.Tensor) -> "BlocksObservation":
        """The observation of episodes ``rows`` only, so finished episodes cost no forward pass."""
        from dataclasses import replace

        take = lambda value: None if value is None else value[rows]  # noqa: E731
        boards = None
        if self.boards is not None:
            boards = type(self.boards)(*(getattr(self.boards, f)[rows] for f in ("start", "goal", "n_blocks", "logo", "main_block")))
        demos = None
        if self.demos is not None:
            demos = type(self.demos)(self.demos.actions[rows], self.demos.points[rows], self.demos.lengths[rows])
        tokens, lengths = take(self.tokens), take(self.lengths)
        if tokens is not None:
            tokens = tokens[:, : int(lengths.max())]
        return replace(
            self,
            instructions=[self.instructions[i] for i in rows.tolist()],
            previous_action=self.previous_action[rows],
            images=take(self.images), tokens=tokens, lengths=lengths,
            boards=boards, positions=take(self.positions), moves_taken=take(self.moves_taken), demos=demos,
            instruction_features=take(self.instruction_features),
        )
