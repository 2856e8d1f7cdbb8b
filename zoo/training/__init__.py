"""The training scripts behind ``recipes/*.py``: a config in, a datamodule, a model, callbacks,
a Trainer, a fit and an export out.

:mod:`zoo.training.light` runs every LIGHT recipe (``recipes/light_*.py``),
:mod:`zoo.training.blocks` the Blocks policy (``recipes/blocks_policy.py``); the recipes only
name their YAML and call them. Like :mod:`zoo.cli`, this package joins the domains
(``zoo.light``, ``zoo.blocks``) to the models and callbacks: it may import both, and neither
domain imports it. Its modules import torch and Lightning at module level.
"""
