"""``RunModelCheckpoint``: Lightning's ModelCheckpoint whose remembered paths follow the run folder.

Lightning keeps the best checkpoints' absolute paths in ``last.ckpt``; a run folder moved (or
carried to another machine) and resumed there would look for its best epoch at the old place,
and, seeing its directory changed, forget which epochs were best. Paths that lay in the old
checkpoint directory are mapped into this run's own ``checkpoints/``; any other path is left
as it was (and :func:`zoo.experiment.load_run_checkpoint` refuses it if it lies outside the run).
"""

from __future__ import annotations

import os
from typing import Any

from lightning.pytorch.callbacks import ModelCheckpoint


class RunModelCheckpoint(ModelCheckpoint):
    @property
    def state_key(self) -> str:
        # ModelCheckpoint's own key: checkpoints written before this class resume with their best epochs
        return "ModelCheckpoint" + super().state_key[len(type(self).__qualname__):]

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        old, new = state_dict.get("dirpath"), self.dirpath
        if old and new and os.path.normpath(old) != os.path.normpath(new):
            state_dict = moved(state_dict, old, new)
        super().load_state_dict(state_dict)


def moved(state: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    """``state`` with every path that lay directly in ``old`` moved into ``new``."""
    old = os.path.normpath(old)

    def move(path):
        if isinstance(path, str) and path and os.path.dirname(os.path.normpath(path)) == old:
            return os.path.join(new, os.path.basename(path))
        return path

    state = dict(state, dirpath=new)
    for key in ("best_model_path", "kth_best_model_path", "last_model_path"):
        if key in state:
            state[key] = move(state[key])
    if isinstance(state.get("best_k_models"), dict):
        state["best_k_models"] = {move(path): score for path, score in state["best_k_models"].items()}
    return state
