"""Train the Transformer Memory Network on LIGHT (Urbanek et al. 2019 §4): grounding lines as
memories, the latest turns as the query, candidates ranked by dot product.

    python recipes/light_memnet.py                                     # dialogue, LIGHT-sim, one process
    python recipes/light_memnet.py data.task=emote                     # rank the 22 emotes
    python recipes/light_memnet.py model.options.dim=256 model.options.layers=2 threads=4
    python recipes/light_memnet.py data.features=no_persona            # a Table 5 grounding ablation

The recipe's YAML ships in the package (zoo/recipes/light_memnet.yaml over light_common.yaml), and
``zoo train light-memnet`` runs the same. See zoo/training/runner.py for what a run writes (checkpoints,
results.json, pretrained/).
"""

import sys

from zoo.training.runner import run

if __name__ == "__main__":
    run("light-memnet", sys.argv[1:])
