"""Train the generative transformer on LIGHT (Urbanek et al. 2019, §4, Table 6).

    python recipes/light_generative.py                                 # from scratch, dialogue, LIGHT-sim
    python recipes/light_generative.py model.options.start=minilm model.options.learning_rate=1e-4
    python recipes/light_generative.py data.task=emote                 # emotes by likelihood over the 22
    python recipes/light_generative.py data.features=dialogue_persona  # a Table 6 ablation row
    python recipes/light_generative.py trainer.devices=8 trainer.strategy=ddp

The recipe's YAML ships in the package (zoo/recipes/light_generative.yaml over light_common.yaml), and
``zoo train light-generative`` runs the same. See zoo/training/runner.py for what a run writes (checkpoints,
results.json, pretrained/).
"""

import sys

from zoo.training.runner import run

if __name__ == "__main__":
    run("light-generative", sys.argv[1:])
