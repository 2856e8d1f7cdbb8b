"""Train the cross-ranker on LIGHT (Urbanek et al. 2019): context and candidate read as one sequence.

    python recipes/light_cross.py                                     # dialogue, LIGHT-sim
    python recipes/light_cross.py data.task=emote
    python recipes/light_cross.py trainer.devices=8 trainer.strategy=ddp

The recipe's YAML ships in the package (zoo/recipes/light_cross_ranker.yaml over light_common.yaml), and
``zoo train light-cross-ranker`` runs the same. See zoo/training/runner.py for what a run writes (checkpoints,
results.json, pretrained/).
"""

import sys

from zoo.training.runner import run

if __name__ == "__main__":
    run("light-cross-ranker", sys.argv[1:])
