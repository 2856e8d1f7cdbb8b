"""What the agent remembers of an episode: the history stack of its last K+1 frames, and the
per-stack standardisation it sees them through (docs/blocks_environment.md §6)."""

from __future__ import annotations

import math

import torch

from zoo.scratch_buffers import ScratchBuffers

HISTORY = 4
"""Previous frames the agent stacks with the current one (K in the paper)."""


def standardization(sums: torch.Tensor, squares: torch.Tensor, count: int, pixel_scale: float = 1.0):
    """Mean and scale of ``per_image_standardization`` from per-stack sums and sums of squares
    of its ``count`` values (divided by ``pixel_scale`` first: 255 for raw pixels):
    ``(mean, max(std, 1 / sqrt(count)))``, population std, in the sums' dtype."""
    mean = sums / (pixel_scale * count)
    variance = (squares / (pixel_scale**2 * count) - mean.square()).clamp(min=0.0)
    return mean, variance.sqrt().clamp(min=1.0 / math.sqrt(count))


def pixel_sums(rows: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """Sum and sum of squares [N, 2] (float64) of each row of pixel values [N, D]: what a
    stack's standardisation is built from, one frame at a time. float64 because the variance
    is a difference of two large sums (float32 loses 1e-4); ``out`` may be a reused float64
    [N, D] buffer for the converted values."""
    values = (out if out is not None else torch.empty(rows.shape, dtype=torch.float64, device=rows.device)).copy_(rows)
    return torch.stack([values.sum(1), torch.linalg.vector_norm(values, dim=1).square()], 1)


def standardize(stack: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    """Per-sample ``(x - mean) / max(std, 1 / sqrt(C*H*W))`` over the whole ``[B, C, H, W]``
    stack: TensorFlow's ``per_image_standardization``, which the agent applied to its 15-channel
    history (population std; the floor keeps a uniform image finite).

    ``inplace=True`` overwrites ``stack``: on a CPU, allocating a fresh 27 MB batch costs
    more (page faults) than the arithmetic, so hot paths that own their buffer should use it."""
    rows = stack.reshape(stack.shape[0], -1, stack.shape[-1])
    count = rows.shape[1] * rows.shape[2]
    # E[x²] - E[x]² from per-row sums and norms (float32 over 120 values, then float64
    # across rows): ~40x faster than Tensor.std on one CPU core, and as exact.
    mean, scale = standardization(rows.sum(dim=2).double().sum(dim=1),
                                  torch.linalg.vector_norm(rows, dim=2).double().square().sum(dim=1), count)
    mean, scale = mean.to(stack.dtype), scale.to(stack.dtype)
    shape = (-1,) + (1,) * (stack.dim() - 1)
    if inplace:
        return stack.sub_(mean.view(shape)).div_(scale.view(shape))
    return (stack - mean.view(shape)) / scale.view(shape)


class HistoryStack:
    """The agent's deque of the last ``K + 1`` frames per episode, vectorised over a batch.

    Two rings hold the frames. The uint8 ring (one row per episode and slot, one head per
    episode) is the record: :meth:`push` copies one frame per pushed episode into it (rows
    moved as int64 words, 6x faster than bytes), :meth:`frames` gathers stacks from it, and
    each frame's sum and sum of squares are computed from it once, the first time an
    observation needs them, so stacks are standardised from cached sums (the zero frames
    contributing zeros, exactly as in the original).

    The float ring, built the first time :meth:`raw_observation` is asked for, is what the
    policy's first convolution reads: float32 pixels of the episodes being observed, laid out
    channels-last with the slots in ring order (a frame stays where it was written instead of
    moving one slot older at every step). Observing the same episodes again then costs no
    copy at all: the observation is a view of the ring, and its
    :attr:`~zoo.blocks.observation.RawStacks.rotation` says which slot is the oldest, so the
    convolution rolls its weights (32 x 15 x 8 x 8 numbers) instead of the pixels being
    reordered (15 x 120 x 120 per stack). When fewer episodes are observed than last time
    (some have ended), the ring is compacted in place once. Gathering and reordering the
    stacks from the uint8 ring at every step used to cost a fifth of a greedy evaluation.
    """

    def __init__(self, K: int = HISTORY):
        self.K = K
        self.slots = K + 1
        self._ring: torch.Tensor | None = None  # [B * slots, 3*H*W] uint8, row b*slots + slot
        self._sums: torch.Tensor | None = None  # [B * slots, 2] float64: sum, sum of squares
        self._stale: torch.Tensor | None = None  # [B * slots] rows whose sums are out of date
        self._head: torch.Tensor | None = None  # [B] slot of the newest frame
        self._frame_shape: tuple[int, ...] = ()
        self._scratch = ScratchBuffers()  # kept across steps and resets
        self._pixels: torch.Tensor | None = None  # float ring [P, H, W, slots * 3] of episodes _resident
        self._resident: torch.Tensor | None = None  # [P] ascending: the episode at each row of _pixels
        self._position: torch.Tensor | None = None  # [B] row of each episode in _pixels, -1 if absent

    @property
    def batch_size(self) -> int:
        return 0 if self._head is None else self._head.shape[0]

    def reset(self, frames: torch.Tensor) -> None:
        """Start every episode: ``K`` all-zero frames followed by ``frames`` ``[B, 3, H, W]``."""
        batch, device = frames.shape[0], frames.device
        self._frame_shape = tuple(frames.shape[1:])
        self._ring = self._buffer("ring", (batch * self.slots, frames[0].numel()), torch.uint8, device).zero_()
        self._sums = torch.zeros(batch * self.slots, 2, dtype=torch.float64, device=device)
        self._stale = torch.zeros(batch * self.slots, dtype=torch.bool, device=device)
        self._head = torch.full((batch,), self.slots - 1, dtype=torch.long, device=device)
        self._pixels = self._resident = self._position = None
        self._write(torch.arange(batch, device=device), frames)

    def reset_episodes(self, frames: torch.Tensor, mask: torch.Tensor) -> None:
        """Restart the episodes in ``mask`` (e.g. new instructions) from ``frames[mask]``."""
        index = self._selected(mask)
        rows = (index * self.slots).unsqueeze(1) + torch.arange(self.slots, device=index.device)
        self._ring[rows.reshape(-1)] = 0
        self._sums[rows.reshape(-1)] = 0
        self._stale[rows.reshape(-1)] = False
        self._head[index] = self.slots - 1
        self._pixels = self._resident = self._position = None  # rebuilt from the uint8 ring when next observed
        self._write(index, frames[index])

    def push(self, frames: torch.Tensor, mask: torch.Tensor | None = None) -> None:
        """Append ``frames`` ``[B, 3, H, W]`` to the episodes where ``mask`` is true (all when
        None), dropping their oldest frame."""
        if self._ring is None:
            raise RuntimeError("call reset() before push()")
        if mask is None:
            index = torch.arange(self.batch_size, device=self._head.device)
        else:
            index = self._selected(mask)
            frames = frames[index]
        self._head[index] = (self._head[index] + 1) % self.slots
        self._write(index, frames)

    def _selected(self, mask: torch.Tensor) -> torch.Tensor:
        return torch.nonzero(torch.as_tensor(mask, device=self._head.device), as_tuple=True)[0]

    def _words(self, tensor: torch.Tensor) -> torch.Tensor:
        """Rows of bytes viewed as int64 words when they divide evenly (faster row copies)."""
        return tensor.view(torch.int64) if tensor.shape[-1] % 8 == 0 else tensor

    def _buffer(self, name: str, shape: tuple[int, ...], dtype: torch.dtype, device=None,
                memory_format: torch.memory_format = torch.contiguous_format) -> torch.Tensor:
        """A scratch tensor kept between calls and resets (see :mod:`zoo.scratch_buffers`)."""
        device = device if device is not None else self._head.device
        return self._scratch.get(name, shape, dtype, device, memory_format)

    def _write(self, index: torch.Tensor, frames: torch.Tensor) -> None:
        """Store ``frames`` at the heads of episodes ``index``, in both rings."""
        if index.numel() == 0:
            return
        flat = frames.to(device=self._ring.device, dtype=torch.uint8).reshape(index.shape[0], -1)
        rows = index * self.slots + self._head[index]
        self._words(self._ring).index_copy_(0, rows, self._words(flat))
        self._stale[rows] = True
        if self._pixels is not None:
            self._write_pixels(index, frames.to(device=self._ring.device))

    def _write_pixels(self, index: torch.Tensor, frames: torch.Tensor) -> None:
        """Convert ``frames`` of episodes ``index`` into their slots of the float ring (those
        episodes that are in it): one strided copy when they are its first rows, as they are
        at every step of a rollout."""
        positions = self._position[index]
        present = positions >= 0
        if not bool(present.all()):
            index, frames, positions = index[present], frames[present], positions[present]
        channels = self._frame_shape[0]
        by_pixel = frames.permute(0, 2, 3, 1)  # [n, H, W, 3], a view
        for head in torch.unique(self._head[index]).tolist():
            chosen = (self._head[index] == head).nonzero().squeeze(1)
            rows = positions[chosen]
            slot = slice(head * channels, (head + 1) * channels)
            if len(rows) == len(positions) and torch.equal(rows, torch.arange(len(rows), device=rows.device)):
                self._pixels[: len(rows), :, :, slot].copy_(by_pixel)
            else:
                self._pixels[rows, :, :, slot] = by_pixel[chosen].to(self._pixels.dtype)

    def _refresh_sums(self) -> None:
        """Sum and sum of squares of every frame written since the last observation."""
        rows = torch.nonzero(self._stale, as_tuple=True)[0]
        if rows.numel() == 0:
            return
        values = self._buffer("values", (rows.numel(), self._ring.shape[1]), torch.float64)
        self._sums.index_copy_(0, rows, pixel_sums(self._ring.index_select(0, rows), out=values))
        self._stale[rows] = False

    def newest_sums(self, episodes: torch.Tensor) -> torch.Tensor:
        """Sum and sum of squares [E, 2] (float64, of the raw pixel values) of the newest frame
        of each of ``episodes``: computed once, as for the observations that standardise with them."""
        self._refresh_sums()
        return self._sums[episodes * self.slots + self._head[episodes]]

    def _rows(self, episodes: torch.Tensor | None = None) -> torch.Tensor:
        """Ring rows of each episode's stack (of ``episodes``, default all), oldest first,
        flattened ``[E * (K+1)]``."""
        if episodes is None:
            episodes = torch.arange(self.batch_size, device=self._head.device)
        steps = torch.arange(1, self.slots + 1, device=self._head.device)
        slots = (self._head[episodes].unsqueeze(1) + steps) % self.slots
        return (episodes.unsqueeze(1) * self.slots + slots).reshape(-1)

    def _shape(self, count: int) -> tuple[int, ...]:
        return (count, self.slots * self._frame_shape[0]) + self._frame_shape[1:]

    def frames(self, out: torch.Tensor | None = None, episodes: torch.Tensor | None = None) -> torch.Tensor:
        """The raw stack ``[E, 3(K+1), H, W]`` uint8 of ``episodes`` (default all), oldest
        first: the cheap form to move to an accelerator and standardise there
        (``standardize(stack / 255)``). ``out`` may be a reused uint8 tensor of that shape."""
        count = self.batch_size if episodes is None else len(episodes)
        if out is None:
            out = torch.empty(self._shape(count), dtype=torch.uint8, device=self._ring.device)
        rows = self._words(out.view(count * self.slots, -1))
        torch.index_select(self._words(self._ring), 0, self._rows(episodes), out=rows)
        return out

    def raw_observation(self, episodes: torch.Tensor | None = None, pixels: bool = True):
        """The stacks of ``episodes`` (default all) as :class:`~zoo.blocks.observation.RawStacks`:
        float pixels, valid until the next call, plus each stack's mean and scale from the
        cached per-frame sums. Standardising them is left to the consumer. Episodes whose
        heads agree (every running episode of a rollout: they all acted at every step) come
        as a view of the float ring with its rotation; others are gathered oldest first.
        With ``pixels`` False only the statistics are computed, and the float ring is not kept."""
        from zoo.blocks.observation import RawStacks

        if episodes is None:
            episodes = torch.arange(self.batch_size, device=self._head.device)
        mean, scale = self._statistics(episodes, math.prod(self._shape(1)))
        mean, scale = mean.to(torch.float32), scale.to(torch.float32)
        if not pixels:  # the statistics only (a consumer that tracks its own first convolution)
            return RawStacks(None, mean, scale, slot_channels=self._frame_shape[0])
        heads = self._head[episodes]
        if len(episodes) and bool((heads == heads[0]).all()):
            pixels = self._float_ring(episodes).permute(0, 3, 1, 2)  # [E, 15, H, W], channels-last strides
            return RawStacks(pixels, mean, scale, rotation=(int(heads[0]) + 1) % self.slots,
                             slot_channels=self._frame_shape[0])
        shape = self._shape(len(episodes))
        raw = self.frames(out=self._buffer("stack", shape, torch.uint8), episodes=episodes)
        # Channels-last: the layout the policy's first convolution runs fastest in on CPU.
        pixels = self._buffer("pixels", shape, torch.float32, memory_format=torch.channels_last).copy_(raw)
        return RawStacks(pixels, mean, scale, slot_channels=self._frame_shape[0])

    def _float_ring(self, episodes: torch.Tensor) -> torch.Tensor:
        """The float ring holding exactly ``episodes`` (ascending) in its first rows, as
        ``[E, H, W, slots * 3]``: as it is when they were observed last time; compacted in place
        when some of those have gone; rebuilt from the uint8 ring otherwise."""
        if self._resident is not None and torch.equal(self._resident, episodes):
            return self._pixels[: len(episodes)]
        positions = self._position[episodes] if self._position is not None else None
        ascending = len(episodes) < 2 or bool((episodes[1:] > episodes[:-1]).all())
        if positions is not None and ascending and bool((positions >= 0).all()):
            for row, source in enumerate(positions.tolist()):  # sources ascend, so each is read before overwritten
                if source != row:
                    self._pixels[row].copy_(self._pixels[source])
        else:
            channels, height, width = self._frame_shape
            ring = self._buffer("float_ring", (self.batch_size, height, width, self.slots * channels), torch.float32)
            order = episodes if ascending else episodes.sort().values
            stored = self._ring.view(self.batch_size, self.slots, channels, height, width)[order]
            ring[: len(order)].view(len(order), height, width, self.slots, channels).copy_(stored.permute(0, 3, 4, 1, 2))
            if not ascending:  # a caller's own order: served by a gather, the ring not kept
                self._pixels = self._resident = self._position = None
                return ring[: len(order)][torch.argsort(torch.argsort(episodes))]
            self._pixels = ring
        self._resident = episodes.clone()
        self._position = torch.full((self.batch_size,), -1, dtype=torch.long, device=episodes.device)
        self._position[episodes] = torch.arange(len(episodes), device=episodes.device)
        return self._pixels[: len(episodes)]

    def _statistics(self, episodes: torch.Tensor | None, count: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and scale (float64) of each stack's pixels / 255, from the per-frame sums."""
        self._refresh_sums()
        sums = self._sums.view(self.batch_size, self.slots, 2)
        if episodes is not None:
            sums = sums[episodes]
        sums = sums.sum(dim=1)
        return standardization(sums[:, 0], sums[:, 1], count, pixel_scale=255.0)

    def observation(self, out: torch.Tensor | None = None, episodes: torch.Tensor | None = None) -> torch.Tensor:
        """What the agent sees: ``[E, 3(K+1), H, W]`` float32 for ``episodes`` (default
        all; the running ones, say, so finished episodes cost nothing), oldest first,
        frames scaled to [0, 1], then :func:`standardize`d over the whole stack. ``out`` may
        be a reused float32 tensor of that shape (saves the page faults of a fresh 220 MB at B=256)."""
        batch = self.batch_size if episodes is None else len(episodes)
        shape = self._shape(batch)
        raw = self.frames(out=self._buffer("stack", shape, torch.uint8), episodes=episodes)
        mean, scale = self._statistics(episodes, raw[0].numel())
        gain = (1.0 / (255.0 * scale)).to(torch.float32).view(batch, 1, 1, 1)
        bias = (-mean / scale).to(torch.float32).view(batch, 1, 1, 1)
        if out is None:
            out = torch.empty(shape, dtype=torch.float32, device=raw.device)
        return out.copy_(raw).mul_(gain).add_(bias)


def stacks_from_frames(frames: torch.Tensor, steps: torch.Tensor, episodes: torch.Tensor, history: int = 4) -> torch.Tensor:
    """Standardised stacks [N, 3·(history+1), H, W] for the contexts ``(steps[i], episodes[i])``.

    ``frames[t, b]`` (uint8 [T+1, B, 3, H, W]) is episode ``b``'s board after ``t`` actions.
    The stack at step t holds frames t-history..t, oldest first, with zeros before the
    episode's start: exactly what :class:`HistoryStack` showed the policy.
    Storing uint8 frames instead of stacks keeps a 40-step rollout of 32 boards at 55 MB.
    The gather happens in uint8 and the float stack is built and standardised in place:
    at a thousand contexts, fresh float temporaries would cost more than the arithmetic.
    """
    return standardize_stacks(raw_stacks(frames, steps, episodes, history))


def raw_stacks(frames: torch.Tensor, steps: torch.Tensor, episodes: torch.Tensor, history: int = 4) -> torch.Tensor:
    """The uint8 stacks [N, 3·(history+1), H, W] before scaling: compact enough to keep in a
    replay memory."""
    offsets = torch.arange(-history, 1, device=steps.device)
    times = steps[:, None] + offsets[None, :]  # [N, history+1]
    picked = frames[times.clamp(min=0), episodes[:, None]]  # uint8 [N, K+1, 3, H, W]
    picked[times < 0] = 0
    return picked.flatten(1, 2)


def standardize_stacks(stacks: torch.Tensor) -> torch.Tensor:
    """uint8 stacks -> the standardised float32 the policy reads, built in one buffer."""
    scaled = torch.empty(stacks.shape, dtype=torch.float32, device=stacks.device).copy_(stacks).mul_(1.0 / 255.0)
    return standardize(scaled, inplace=True)
