"""Data loading that resumes mid-epoch exactly, so long CPU runs can span several sessions.

Lightning restores model, optimiser and loop counters from a checkpoint, and restores a
dataloader's position only if the loader has ``state_dict``/``load_state_dict``. These
loaders draw each epoch's order from ``(seed, epoch)`` and remember how many batches they
have handed out. Lightning does not fetch ahead from a loader with a length, so when a
checkpoint is written that count is exactly the number of batches trained on (the
interrupted-run test in tests/test_blocks_training.py holds it to that).
"""

from __future__ import annotations

from typing import Iterator

import torch
from torch.utils.data import DataLoader, Sampler


def rank_and_world() -> tuple[int, int]:
    """This process's rank and the number of processes (0 and 1 outside distributed runs)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def shard(order: list[int]) -> list[int]:
    """This rank's share of ``order``: every ``world``-th item, the tail that would leave
    ranks with unequal counts dropped (under DDP every rank must take the same number of
    steps). The whole order outside distributed runs."""
    rank, world = rank_and_world()
    return order[: len(order) // world * world][rank::world]


class EpochPermutationSampler(Sampler[int]):
    """Indices in a fresh seeded order each epoch (or in order), skipping a resumed prefix.

    Under DDP each rank takes its :func:`shard` of the same order, so the ranks see
    disjoint items; Lightning must not wrap it in a DistributedSampler
    (``use_distributed_sampler=False``, as the Blocks recipe sets).
    """

    def __init__(self, size: int, seed: int = 0, shuffle: bool = True):
        self.size, self.seed, self.shuffle = size, seed, shuffle
        self.epoch = 0
        self.skip = 0

    def set_epoch(self, epoch: int) -> None:
        """Called by Lightning before every epoch."""
        if epoch != self.epoch:
            self.skip = 0
        self.epoch = epoch

    def order(self) -> list[int]:
        if not self.shuffle:
            return list(range(self.size))
        generator = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
        return torch.randperm(self.size, generator=generator).tolist()

    def __iter__(self) -> Iterator[int]:
        start, self.skip = self.skip, 0
        return iter(shard(self.order())[start:])

    def __len__(self) -> int:
        return self.size // rank_and_world()[1]


class ResumableLoader(DataLoader):
    """A DataLoader whose position within the epoch survives a checkpoint and restart."""

    def __init__(self, dataset, batch_size: int, seed: int = 0, shuffle: bool = True, **kwargs):
        sampler = EpochPermutationSampler(len(dataset), seed, shuffle)
        super().__init__(dataset, batch_size=batch_size, sampler=sampler, **kwargs)
        self._handed_out = 0

    def __iter__(self):
        sampler: EpochPermutationSampler = self.sampler
        self._handed_out = sampler.skip // self.batch_size
        for batch in super().__iter__():
            self._handed_out += 1
            yield batch

    def state_dict(self) -> dict:
        return {"epoch": self.sampler.epoch, "batches_consumed": self._handed_out}

    def load_state_dict(self, state: dict) -> None:
        self.sampler.epoch = state["epoch"]
        self.sampler.skip = state["batches_consumed"] * self.batch_size


class ReplayMemoryBatches:
    """The original supervised trainer's batches (docs/blocks_environment.md §6.4), as lists of dataset indices.

    Episodes (groups of consecutive items) are visited in a fresh seeded order each epoch;
    after each one joins a memory of the last ``capacity`` items, one batch of
    ``batch_size`` items is drawn from that memory (uniformly, without replacement), so an
    epoch has one batch per episode and recent episodes are seen more often. The draw for
    batch ``k`` depends only on ``(seed, epoch, k)``, so a resumed epoch can skip ahead.
    """

    def __init__(self, group_sizes: list[int], batch_size: int = 32, capacity: int = 2000, seed: int = 0):
        self.batch_size, self.capacity, self.seed = batch_size, capacity, seed
        self.starts = torch.tensor([0, *group_sizes]).cumsum(0)
        self.epoch, self.skip = 0, 0

    def set_epoch(self, epoch: int) -> None:
        if epoch != self.epoch:
            self.skip = 0
        self.epoch = epoch

    @property
    def sampler(self) -> "ReplayMemoryBatches":
        """Lightning calls ``batch_sampler.sampler.set_epoch`` before every epoch."""
        return self

    @property
    def episodes(self) -> int:
        return len(self.starts) - 1

    def __len__(self) -> int:
        return self.episodes // rank_and_world()[1]

    def __iter__(self) -> Iterator[list[int]]:
        """Under DDP each rank replays its :func:`shard` of the episode order into a memory
        of its own, as each of the original's workers would."""
        from collections import deque

        generator = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
        order = shard(torch.randperm(self.episodes, generator=generator).tolist())
        rank = rank_and_world()[0]
        memory: deque[int] = deque(maxlen=self.capacity)
        start, self.skip = self.skip, 0
        for index, group in enumerate(order):
            memory.extend(range(int(self.starts[group]), int(self.starts[group + 1])))
            if index < start:  # resumed: only the memory's contents matter for skipped batches
                continue
            draw = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch * 100_003 + index * 101 + rank)
            picks = torch.randperm(len(memory), generator=draw)[: self.batch_size].tolist()
            yield [memory[i] for i in picks]


class ResumableBatchLoader(DataLoader):
    """A DataLoader over a resumable batch sampler (such as :class:`ReplayMemoryBatches`)
    whose position within the epoch survives a checkpoint and restart."""

    def __init__(self, dataset, batch_sampler: ReplayMemoryBatches, **kwargs):
        super().__init__(dataset, batch_sampler=batch_sampler, **kwargs)
        self._handed_out = 0

    def __iter__(self):
        self._handed_out = self.batch_sampler.skip
        for batch in super().__iter__():
            self._handed_out += 1
            yield batch

    def state_dict(self) -> dict:
        return {"epoch": self.batch_sampler.epoch, "batches_consumed": self._handed_out}

    def load_state_dict(self, state: dict) -> None:
        self.batch_sampler.epoch = state["epoch"]
        self.batch_sampler.skip = state["batches_consumed"]
