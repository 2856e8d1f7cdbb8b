"""Train the bi-ranker on LIGHT (Urbanek et al. 2019): context and candidate encoded apart, dot product.

    python recipes/light_bi.py                                        # dialogue, LIGHT-sim, one process
    python recipes/light_bi.py data.task=emote model.options.learning_rate=1e-4
    python recipes/light_bi.py trainer.devices=8 trainer.strategy=ddp # multi-GPU with Lightning's DDP
    python recipes/light_bi.py data.features=no_persona               # a Table 5 grounding ablation

The recipe's YAML ships in the package (zoo/recipes/light_bi_ranker.yaml over light_common.yaml), and
``zoo train light-bi-ranker`` runs the same. See zoo/training/runner.py for what a run writes (checkpoints,
results.json, pretrained/).
"""

import sys

from zoo.training.runner import run

if __name__ == "__main__":
    run("light-bi-ranker", sys.argv[1:])
