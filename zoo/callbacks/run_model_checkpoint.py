"""``RunModelCheckpoint``: Lightning's ModelCheckpoint whose remembered paths follow the run
folder and never leave it.

Lightning keeps the best checkpoints' absolute paths in ``last.ckpt`` and, when a better epoch
comes, deletes the one it remembers (recursively, through fsspec). ``last.ckpt`` is a file on
disk, so those paths are data anyone could have written: a path such as
``run/checkpoints/../../elsewhere`` passes Lightning's "inside dirpath" check, which compares
path text. Here every remembered path is resolved (links and ``..`` followed) when it is read
back, and a resumed run whose state names anything but a ``.ckpt`` file directly in its own
``checkpoints/`` is refused in one line before training. The deletion itself unlinks only such
a regular file, never a directory or a link.

A run folder moved (or carried to another machine) and resumed there would look for its best
epoch at the old place, and, seeing its directory changed, forget which epochs were best.
Paths that lay in the old checkpoint directory are mapped into this run's own ``checkpoints/``
first.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.utilities import rank_zero_warn

from zoo.errors import ZooError

PATH_KEYS = ("best_model_path", "kth_best_model_path", "last_model_path")
"""The single paths a ModelCheckpoint state remembers (``best_k_models`` holds the others)."""


class CheckpointStateError(ZooError, ValueError):
    """A checkpoint's remembered paths point outside the run's own checkpoint folder."""


class RunModelCheckpoint(ModelCheckpoint):
    @property
    def state_key(self) -> str:
        # ModelCheckpoint's own key: checkpoints written before this class resume with their best epochs
        return "ModelCheckpoint" + super().state_key[len(type(self).__qualname__):]

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        old, new = state_dict.get("dirpath"), self.dirpath
        if old and new and os.path.normpath(old) != os.path.normpath(new):
            state_dict = moved(state_dict, old, new)
        if new:
            check_inside(state_dict, new)
        super().load_state_dict(state_dict)

    def _remove_checkpoint(self, trainer, filepath: str) -> None:
        """Delete a checkpoint this callback wrote: a regular ``.ckpt`` file directly in its
        folder, unlinked (on rank 0, where checkpoints are written); anything else stays."""
        if not trainer.is_global_zero or not self.dirpath:
            return
        if not own_checkpoint(filepath, self.dirpath):
            rank_zero_warn(f"not deleting {filepath!r}: it is not a checkpoint file in {self.dirpath!r}")
            return
        try:
            os.unlink(filepath)
        except FileNotFoundError:
            pass


def own_checkpoint(path: str, directory: str) -> bool:
    """Whether ``path`` names a ``.ckpt`` file directly in ``directory`` once both are resolved
    (links and ``..`` followed), and is a regular file or absent: the only kind of path a
    checkpoint callback may delete or load."""
    if not isinstance(path, str) or not path.endswith(".ckpt"):
        return False
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError:  # a link loop, a name too long: not a file zoo wrote
        return False
    if mode is not None and not stat.S_ISREG(mode):
        return False
    try:
        return Path(path).resolve().parent == Path(directory).resolve()
    except (OSError, RuntimeError):
        return False


def check_inside(state: dict[str, Any], directory: str) -> None:
    """Refuse (:class:`CheckpointStateError`, one line) a checkpoint state that remembers any
    path but a checkpoint file directly in ``directory``."""
    named = [state.get(key) for key in PATH_KEYS]
    best_k = state.get("best_k_models")
    if best_k is not None and not isinstance(best_k, dict):
        raise CheckpointStateError(f"a checkpoint's best_k_models is {type(best_k).__name__}, not a mapping; "
                                   "the run's last.ckpt was not written by zoo: use a new run_dir")
    named += list(best_k or {})
    for path in named:
        if path in (None, ""):
            continue
        if not own_checkpoint(path, directory):
            raise CheckpointStateError(f"refusing to resume: the run's last.ckpt names {str(path)!r}, which is not "
                                       f"a checkpoint file in {directory!r}; the file was not written by zoo: "
                                       "use a new run_dir")


def moved(state: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    """``state`` with every path that lay directly in ``old`` moved into ``new``."""
    old = os.path.normpath(old)

    def move(path):
        if isinstance(path, str) and path and os.path.dirname(os.path.normpath(path)) == old:
            return os.path.join(new, os.path.basename(path))
        return path

    state = dict(state, dirpath=new)
    for key in PATH_KEYS:
        if key in state:
            state[key] = move(state[key])
    if isinstance(state.get("best_k_models"), dict):
        state["best_k_models"] = {move(path): score for path, score in state["best_k_models"].items()}
    return state
