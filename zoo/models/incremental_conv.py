"""The first convolution of a Blocks policy kept current through a rollout by convolving only
what changed (the convolution floor moved by a rollout's one changed block; measured against the dense convolution by
``benchmarks/blocks_incremental_conv.py``).

Between two steps of an episode one block moves, so a frame differs from the one before it
only inside the moved block's footprints before and after (``BoardRenderer.footprint``:
12 x 12 pixels each). The convolution is linear, so the response to the stack at step t is
the one at t-1 plus, for each history slot ``a``, slot ``a``'s weights convolved with the
change of the frame now in that slot:

    conv(stack_t) = conv(stack_{t-1}) + sum_a conv(frame_{t-4+a} - frame_{t-5+a}, W_a)

Each change is zero outside a 36 x 36 patch, so each term is an 8 x 8 window of outputs: one
matrix product per step (the patch's columns with all five slots' weights) instead of a
convolution over every pixel of the stack. An episode's first frame enters densely, once.
Responses are bias-free and unstandardised, as :class:`~zoo.models.blocks.network.ImageEncoder`
folds standardisation in after the convolution.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

WINDOW = 8
"""Outputs per side of the window a step's change can reach."""


class FirstConvolutionTracker:
    """Per-episode responses of ``convolution`` (stride s, kernel k, padding p; its input the
    ``slots`` history frames of ``channels`` channels, oldest first) to a rollout's stacks.

    :meth:`reset` with the first frames, :meth:`push` the frames of the episodes that acted
    (with where they can have changed), :meth:`response` for the episodes observed. When a
    change does not fit its window (a board edited by hand, say) :attr:`active` turns false and
    the caller convolves densely from then on; this never happens to a one-block move.
    """

    def __init__(self, convolution: nn.Conv2d, slots: int = 5, channels: int = 3):
        weight = convolution.weight.detach()
        self.outputs, self.slots, self.channels = weight.shape[0], slots, channels
        (self.kernel, _), (self.stride, _), (self.padding, _) = convolution.kernel_size, convolution.stride, convolution.padding
        # [slots * outputs, channels, k, k]: block a holds history slot a's weights
        self.by_slot = (weight.view(self.outputs, slots, channels, self.kernel, self.kernel).transpose(0, 1)
                        .reshape(slots * self.outputs, channels, self.kernel, self.kernel))
        self.columns = self.by_slot.flatten(1).t().contiguous()  # for the patch products
        self.span = (WINDOW - 1) * self.stride + self.kernel
        self.active = True
        self.weight, self.version = convolution.weight, convolution.weight._version

    def serves(self, weight: torch.Tensor) -> bool:
        """Whether this tracker's responses are those of ``weight`` as it is now (not another
        model's, nor from before an optimiser step)."""
        return self.active and weight is self.weight and weight._version == self.version

    def reset(self, frames: torch.Tensor) -> None:
        """Start every episode from ``frames`` [B, channels, H, W] (raw pixels) after ``slots-1``
        all-zero frames."""
        first = frames.to(self.by_slot.dtype).contiguous(memory_format=torch.channels_last)
        dense = F.conv2d(first, self.by_slot, None, self.stride, self.padding)  # [B, slots*O, R, R]
        self.size = dense.shape[-1]
        # Responses are kept position-major ([B, R, R, channels], a channels-last layout): a
        # window's output at one position is then a contiguous row of channels, and adding a
        # window is one indexed add of rows.
        self.first = dense.permute(0, 2, 3, 1).contiguous()  # [B, R, R, slots*O]
        batch = len(frames)
        # The response to an all-ones stack with zero padding: what standardisation folds with.
        ones = first.new_ones(1, 1, *frames.shape[-2:])
        self.ones = F.conv2d(ones, self.weight.detach().sum(1, keepdim=True), None, self.stride, self.padding)
        self.ones = self.ones.contiguous(memory_format=torch.channels_last)
        newest = slice((self.slots - 1) * self.outputs, None)
        self.current = self.first[..., newest].contiguous()  # the response at step 0: the first frame, newest slot
        device = frames.device
        self.count = torch.zeros(batch, dtype=torch.long, device=device)  # frames pushed since the first
        self.changes = torch.zeros(batch, self.slots, WINDOW * WINDOW, self.slots * self.outputs, dtype=self.first.dtype,
                                   device=device)
        self.corner = torch.zeros(batch, self.slots, 2, dtype=torch.long, device=device)  # each change's first output row, column
        # Each episode's latest frame inside a zero border as wide as the padding, its sides a
        # whole number of strides: a patch is then 9 x 9 blocks of stride x stride pixels.
        height, width = frames.shape[-2:]
        border = self.padding + (-(height + 2 * self.padding)) % self.stride
        self.latest = torch.zeros(batch, self.channels, height + self.padding + border, width + self.padding + border,
                                  dtype=frames.dtype, device=device)
        self.interior = (slice(self.padding, self.padding + height), slice(self.padding, self.padding + width))
        self.latest[:, :, self.interior[0], self.interior[1]] = frames
        self.active = True

    def push(self, episodes: torch.Tensor, frames: torch.Tensor, bounds: torch.Tensor) -> None:
        """Episodes ``episodes`` now show ``frames`` [n, channels, H, W]; ``bounds`` [n, 4] (row
        low/high, column low/high, inclusive) hold every pixel that changed since their last."""
        if not self.active or len(episodes) == 0:
            return
        corner, fits = self._corners(bounds)
        if not bool(fits.all()):
            self.active = False
            return
        patches = self._patches(episodes, frames, corner)
        columns = F.unfold(patches, self.kernel, stride=self.stride)  # [n, c*k*k, WINDOW²]
        change = columns.transpose(1, 2) @ self.columns  # [n, WINDOW², slots*O]: position-major
        self.count[episodes] += 1
        count = self.count[episodes]
        ring = count % self.slots
        self.changes[episodes, ring] = change
        self.corner[episodes, ring] = corner
        window = torch.arange(WINDOW, device=episodes.device)
        targets, values = [], []
        for slot in range(self.slots):
            frame = count - (self.slots - 1) + slot  # the frame now in history slot `slot`
            block = slice(slot * self.outputs, (slot + 1) * self.outputs)
            entering = frame == 0  # the first frame reaching this slot: dense
            if bool(entering.any()):
                self.current[episodes[entering]] += self.first[episodes[entering], ..., block]
            changed = frame >= 1  # a later frame: its change since the frame before, windowed
            if bool(changed.any()):
                who, ring_slot = episodes[changed], frame[changed] % self.slots
                rows = self.corner[who, ring_slot, 0][:, None, None] + window[None, :, None]
                cols = self.corner[who, ring_slot, 1][:, None, None] + window[None, None, :]
                targets.append(((who[:, None, None] * self.size + rows) * self.size + cols).reshape(-1))
                values.append(self.changes[who, ring_slot, :, block].reshape(-1, self.outputs))
        if targets:  # every slot's windows in one add of rows of channels
            self.current.view(-1, self.outputs).index_add_(0, torch.cat(targets), torch.cat(values))

    def response(self, episodes: torch.Tensor) -> "TrackedResponse":
        """The bias-free response [E, O, R, R] to the raw stacks of ``episodes`` (a view when
        they are all the episodes, in order)."""
        everyone = len(episodes) == len(self.current) and bool((episodes == torch.arange(len(episodes), device=episodes.device)).all())
        values = self.current if everyone else self.current[episodes]
        return TrackedResponse(values.permute(0, 3, 1, 2), self)  # [E, O, R, R], channels-last strides

    def _corners(self, bounds: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The first output row and column of each change's window (the first output a changed
        pixel reaches), and whether every output it reaches is inside the window."""
        corners, fits = [], torch.ones(len(bounds), dtype=torch.bool, device=bounds.device)
        s, p, k, last = self.stride, self.padding, self.kernel, self.size - WINDOW
        for low, high in ((bounds[:, 0], bounds[:, 1]), (bounds[:, 2], bounds[:, 3])):
            start = torch.div(low + p - k + 1 + s - 1, s, rounding_mode="floor").clamp(0, last)
            reached = torch.div(high + p, s, rounding_mode="floor")  # the last output a change reaches
            fits &= (high < low) | (reached <= start + WINDOW - 1) | (start == last)
            corners.append(start)
        return torch.stack(corners, 1), fits

    def _patches(self, episodes: torch.Tensor, frames: torch.Tensor, corner: torch.Tensor) -> torch.Tensor:
        """``frames - latest`` of ``episodes`` in each change's input patch [n, channels, span,
        span] (zero outside the image, where the convolution pads), gathered as 9 x 9 blocks of
        stride x stride pixels in one indexing; then ``frames`` become the latest."""
        blocks = self.span // self.stride
        steps = torch.arange(blocks, device=corner.device)
        rows = (corner[:, 0, None] + steps)[:, :, None]
        cols = (corner[:, 1, None] + steps)[:, None, :]
        which = episodes[:, None, None]

        def cut(padded: torch.Tensor) -> torch.Tensor:
            n, c, height, width = padded.shape
            tiled = padded.view(n, c, height // self.stride, self.stride, width // self.stride, self.stride)
            picked = tiled[which, :, rows, :, cols, :]  # [n, blocks, blocks, c, stride, stride]
            return picked.permute(0, 3, 1, 4, 2, 5).reshape(len(episodes), c, self.span, self.span)

        old = cut(self.latest)
        if len(episodes) == len(self.latest):  # every episode acted (in order): a plain copy
            self.latest[:, :, self.interior[0], self.interior[1]].copy_(frames)
        else:
            self.latest[episodes, :, self.interior[0], self.interior[1]] = frames
        new = cut(self.latest)
        return new.to(self.by_slot.dtype).sub_(old.to(self.by_slot.dtype))


class TrackedResponse:
    """A tracker's response with the tracker that made it, so that a model uses it only if
    it is its own (:meth:`FirstConvolutionTracker.serves`)."""

    def __init__(self, values: torch.Tensor, tracker: FirstConvolutionTracker):
        self.values, self.tracker = values, tracker

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, rows) -> "TrackedResponse":
        return TrackedResponse(self.values[rows], self.tracker)

    def to(self, device) -> "TrackedResponse":
        return TrackedResponse(self.values.to(device), self.tracker)

    def clone(self) -> "TrackedResponse":
        return TrackedResponse(self.values.clone(), self.tracker)
