"""``AtomicCheckpointIO``: every checkpoint a run writes appears whole under its name, or not at all.

Lightning's own save writes the final name through fsspec, which on some setups stages in the
system temporary directory and moves the file across filesystems (a copy: a kill leaves a
truncated checkpoint under its final name and the temporary in /tmp). Here the checkpoint is
written to a temporary sibling in the same directory, fsynced and renamed over the final
name, so a kill or a full disk leaves the previous file intact; a full disk is one line
(:class:`CheckpointWriteError`), and the sibling is removed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lightning.pytorch.plugins.io import TorchCheckpointIO

from zoo.errors import ZooError


class CheckpointWriteError(ZooError, OSError):
    """A checkpoint could not be written (e.g. the disk is full); the previous one is intact."""


class AtomicCheckpointIO(TorchCheckpointIO):
    """Lightning's ``TorchCheckpointIO`` with a same-directory, fsynced, renamed save."""

    def save_checkpoint(self, checkpoint: dict[str, Any], path, storage_options: Any | None = None) -> None:
        import torch

        from zoo.safe_writes import atomic_write

        if storage_options is not None:
            raise TypeError(f"{type(self).__name__} takes no storage_options")
        path = Path(path)
        try:
            atomic_write(path, lambda stream: torch.save(checkpoint, stream), sync=True)
        except OSError as error:
            reason = error.strerror or str(error) or type(error).__name__
            raise CheckpointWriteError(f"cannot write checkpoint {path}: {reason}; the previous checkpoints "
                                       "are intact, free space and rerun the same command to resume") from None

    def remove_checkpoint(self, path) -> None:
        """Unlink ``path`` if it is a regular file: never a directory, never through a link
        (Lightning's own removal is recursive, and the path may come from a checkpoint file)."""
        import os
        import stat

        try:
            if stat.S_ISREG(os.lstat(path).st_mode):
                os.unlink(path)
        except FileNotFoundError:
            pass
