"""Run a recipe under DDP and record a digest of each rank's final weights.

    python tests/ddp_check.py light|blocks key=value ...

Lightning's DDP launcher starts the other ranks by running this same script again, so it must
be a script; ``tests/test_light_bi_cross.py`` and ``tests/test_blocks_training.py`` run it
and compare the digests.
"""

import hashlib
import json
import sys
from pathlib import Path

import lightning as L

from zoo.training.runner import run

REPO = Path(__file__).resolve().parent.parent


class WeightsDigest(L.Callback):
    """Writes ``rank<N>.json`` with a sha256 of every parameter after training."""

    def on_train_end(self, trainer, module):
        digest = hashlib.sha256()
        for name, tensor in sorted(module.state_dict().items()):
            digest.update(name.encode())
            digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
        run_dir = Path(trainer.default_root_dir)
        (run_dir / f"rank{trainer.global_rank}.json").write_text(json.dumps({"weights": digest.hexdigest()}))


def assert_no_unlabelled_duplicates(output: str, result: str) -> None:
    """Two ranks share one terminal: a line printed by both must say which rank printed it,
    and the progress, estimates and results (the line starting with ``result``) come from
    rank 0 alone; the other ranks keep to warnings."""
    from collections import Counter

    lines = [line for line in output.splitlines() if line.strip()]
    repeated = [line for line, count in Counter(lines).items() if count > 1 and not line.startswith("[rank ")]
    assert not repeated, repeated
    under_ddp = [line for line in lines if line.startswith("[rank ")]
    assert under_ddp and all(line.startswith("[rank 0] ") for line in under_ddp if "warning" not in line), under_ddp
    assert any(line.startswith(f"[rank 0] {result}") for line in under_ddp), under_ddp


if __name__ == "__main__":
    kind, overrides = sys.argv[1], sys.argv[2:]
    if kind == "light":
        run("light-bi-ranker", overrides, callbacks=[WeightsDigest()])
    elif kind == "blocks":
        import importlib.util

        spec = importlib.util.spec_from_file_location("blocks_policy_recipe", REPO / "recipes" / "blocks_policy.py")
        recipe = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(recipe)
        recipe.main(overrides, extra_callbacks=[WeightsDigest()])
    else:
        raise SystemExit(f"first argument: light or blocks, not {kind!r}")
