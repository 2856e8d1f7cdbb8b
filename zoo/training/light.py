"""What a run of a LIGHT ranker builds (:func:`build`) and reports (:func:`report`) for the
runner, :mod:`zoo.training.runner` (``zoo train light-bi-ranker``, ``recipes/light_bi.py``).

The :class:`LightDataModule` the recipe's ``data`` section describes, the registered model built
from ``model.options`` and fitted to the training split (``setup_from_data``: a vocabulary), and
the best epoch chosen by validation R@1; after the fit the best epoch is tested on seen and unseen
test (metrics reduced over all ranks) and ``results.json`` records the task, the grounding features
and the data beside what every run records. Any ``trainer.*`` option applies (``devices``,
``strategy=ddp``, ``num_nodes``, ``precision``).
"""

from __future__ import annotations

from typing import Any

import lightning as L
from lightning.pytorch import LightningModule
from omegaconf import DictConfig, OmegaConf

from zoo.light.datamodule import LightDataModule
from zoo.light.sim import SimCorpus
from zoo.registry import ModelSpec
from zoo.run_directory import RunDirectory
from zoo.training.runner import Build, model_options

MONITOR = "valid/r_at_1"
NEEDED = {"collate": "collate(items) -> batch", "setup_from_data": "setup_from_data(train)",
          "validation_step": f"validation_step logging {MONITOR}", "test_step": "test_step"}
"""What the runner calls on a LIGHT ranker (:class:`zoo.models.neural_ranker.NeuralRanker` has each)."""


def check_trainable(spec: ModelSpec) -> None:
    """One line naming what ``spec``'s class lacks, if the runner cannot train it."""
    lacking = [words for method, words in NEEDED.items()
               if getattr(spec.cls, method, None) in (None, getattr(LightningModule, method, None))]
    if lacking:
        raise SystemExit(f"zoo train cannot train {spec.name}: {spec.cls.__name__} defines no {', '.join(lacking)}; "
                         "subclass zoo.models.neural_ranker.NeuralRanker, which defines them")


def make_datamodule(config: DictConfig, collate) -> LightDataModule:
    data = config.data
    limit = OmegaConf.to_container(data.limit) if isinstance(data.limit, DictConfig) else data.limit
    return LightDataModule(task=data.task, features=data.features, source=data.source, data_dir=data.data_dir,
                           sim=SimCorpus(data.sim_preset), sim_dir=data.sim_dir, batch_size=data.batch_size,
                           eval_batch_size=data.eval_batch_size, collate=collate, num_workers=data.num_workers,
                           limit=limit)


def make_model(config: DictConfig):
    """The model, its options checked against its constructor first."""
    spec, options = model_options(config)
    return spec.cls(**{**spec.defaults, **options})


def build(config: DictConfig, run_directory: RunDirectory) -> Build:
    """The model fitted to the training split and its data; the best epoch by validation R@1."""
    model = make_model(config)
    datamodule = make_datamodule(config, model.collate)
    datamodule.prepare_data()
    model.setup_from_data(datamodule.dataset("train"))
    return Build(model, datamodule, monitor=MONITOR, mode="max", callbacks=[], evaluation=[])


def report(config: DictConfig, build: Build, trainer: L.Trainer, best_epoch: int | None) -> dict[str, Any]:
    """What a LIGHT run's results.json adds: the task, features and data, the training split's
    size, and (``test: true``) the best epoch's seen and unseen test figures."""
    datamodule = build.datamodule
    results: dict[str, Any] = {"task": config.data.task, "features": config.data.features,
                               "data": datamodule.label, "train_examples": len(datamodule.dataset("train"))}
    if config.get("test", True):
        for metrics in trainer.test(build.model, datamodule=datamodule, verbose=False):
            results.update({key: round(float(value), 6) for key, value in metrics.items()})
    return results
