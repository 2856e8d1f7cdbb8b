"""The training runners behind ``zoo train NAME`` and the thin scripts ``recipes/*.py``: a
recipe (``zoo/recipes/*.yaml``: ``model: {name, options}`` + data, trainer, checkpoint,
logger, resume) in, a registered model, a datamodule, callbacks, a Trainer, a fit and an export out.

:mod:`zoo.training.light` runs every LIGHT recipe (``light-*``), :mod:`zoo.training.blocks`
every Blocks objective (``blocks-*``); both build the model through the factory with its
options checked against the constructor (:mod:`zoo.training.model_options`). Like
:mod:`zoo.cli`, this package joins the domains (``zoo.light``, ``zoo.blocks``) to the models
and callbacks: it may import both, and neither domain imports it. Its modules import torch and
Lightning at module level.
"""
