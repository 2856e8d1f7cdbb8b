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

class EpochPermutationSampler(Sampler[int]):
    """Indices in a fresh seeded order each epoch (or in order), skipping a resumed prefix."""

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
        return iter(self.order()[start:])

    def __len__(self) -> int:
        return self.size


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
