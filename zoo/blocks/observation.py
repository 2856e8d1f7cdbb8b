"""What a Blocks policy sees at one step of a batch of episodes."""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from zoo.blocks.board import BoardBatch
from zoo.blocks.demos import DemoBatch


@dataclass(frozen=True)
class RawStacks:
    """Image stacks before standardisation: ``pixels`` [B, 15, H, W] float32 in 0..255 and
    each stack's ``mean`` and ``scale`` [B] (of the pixels / 255), so that the standardised
    stack the agent sees is ``(pixels / 255 - mean) / scale``, in history order.

    Kept apart because standardisation is affine per stack: a consumer whose first
    operation is linear (the policy's first convolution) applies it to that operation's
    far smaller output instead of to every pixel. For the same reason the history slots
    (``slot_channels`` channels each) may be stored rotated: slot ``p`` of ``pixels`` holds
    history slot ``(p - rotation) mod K+1`` (0 the oldest), and a convolution rolls its
    weights instead of the pixels being reordered. :meth:`standardized` gives the usual
    tensor, oldest first. The pixels may live in a buffer the producer reuses at its next
    step, so consume them at once (or :meth:`clone`). ``pixels`` is None when a policy's tracker
    gives its first convolution's ``response`` instead (see EpisodeRunner's ``track``).
    """

    pixels: torch.Tensor | None
    mean: torch.Tensor
    scale: torch.Tensor
    rotation: int = 0
    slot_channels: int = 3
    response: object | None = None
    """The policy's first convolution applied to ``pixels`` (bias-free, before
    standardisation), when its tracker kept it current through the rollout (a
    ``zoo.models.incremental_conv.TrackedResponse``, which knows whose it is); ``None`` otherwise."""

    def __len__(self) -> int:
        return len(self.mean)

    def _map(self, change) -> "RawStacks":
        pixels = None if self.pixels is None else change(self.pixels)
        return replace(self, pixels=pixels, mean=change(self.mean), scale=change(self.scale),
                       response=None if self.response is None else change(self.response))  # it has the same methods

    def __getitem__(self, rows) -> "RawStacks":
        return self._map(lambda tensor: tensor[rows])

    def to(self, device) -> "RawStacks":
        return self._map(lambda tensor: tensor.to(device))

    def clone(self) -> "RawStacks":
        return self._map(lambda tensor: tensor.clone())

    def in_history_order(self) -> torch.Tensor:
        """The pixels with the slots oldest first (a copy when they are stored rotated)."""
        if self.pixels is None:
            raise ValueError("these stacks carry only their policy's tracked first-convolution response, no pixels")
        if self.rotation == 0:
            return self.pixels
        batch, channels = self.pixels.shape[:2]
        slots = self.pixels.view(batch, channels // self.slot_channels, self.slot_channels, *self.pixels.shape[2:])
        return slots.roll(-self.rotation, dims=1).flatten(1, 2)

    def standardized(self) -> torch.Tensor:
        pixels = self.in_history_order()
        shape = (-1,) + (1,) * (pixels.dim() - 1)
        gain = (1.0 / (255.0 * self.scale)).to(pixels.dtype).view(shape)
        return pixels * gain - (self.mean / self.scale).to(pixels.dtype).view(shape)


@dataclass
class BlocksObservation:
    """The agent's inputs, plus privileged fields that only oracle baselines may read.

    Learned policies use ``instructions`` (or their pre-tokenised ``tokens``/``lengths``),
    ``images`` (the K=4 history stack, [B, 15, 120, 120]: a standardised tensor, or
    :class:`RawStacks` that say how to standardise) and
    ``previous_action`` (-1 at the start of an episode). ``boards``, ``positions``,
    ``moves_taken`` and ``demos`` are the simulator's state, for baselines such as the
    demonstration replayer and for the oracle planner.
    """

    instructions: list[str]
    previous_action: torch.Tensor
    images: "torch.Tensor | RawStacks | None" = None
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
