"""Run the bi-ranker recipe under DDP and record a digest of each rank's final weights.

Lightning's DDP launcher starts the other ranks by running this same script again, so it must
be a script; ``tests/test_light_bi_cross.py`` runs it and compares the digests.
"""

import hashlib
import json
import sys
from pathlib import Path

import lightning as L

from zoo.light_recipe import recipe_configs, run

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


if __name__ == "__main__":
    run(sys.argv[1:], recipe_configs(REPO / "recipes" / "light_bi.py"), extra_callbacks=[WeightsDigest()])
