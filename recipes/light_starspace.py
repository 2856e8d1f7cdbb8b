"""Train StarSpace on LIGHT (Urbanek et al. 2019, Section 4; Wu et al. 2018): one bag-of-words space, hinge loss.

    python recipes/light_starspace.py                                  # dialogue, LIGHT-sim, one process
    python recipes/light_starspace.py data.task=emote threads=1
    python recipes/light_starspace.py model.options.dim=256 trainer.max_epochs=3
    python recipes/light_starspace.py data.features=no_persona         # a Table 5 grounding ablation

Then look at the learned space (the paper's Table 3):

    zoo light neighbors chicken --model runs/light/starspace-dialogue/pretrained

The recipe's YAML ships in the package (zoo/recipes/light_starspace.yaml over light_common.yaml), and
``zoo train light-starspace`` runs the same. See zoo/training/runner.py for what a run writes (checkpoints,
results.json, pretrained/).
"""

import sys

from zoo.training.runner import run

if __name__ == "__main__":
    run("light-starspace", sys.argv[1:])
