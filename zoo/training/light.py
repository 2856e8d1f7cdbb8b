"""The one training script behind every LIGHT ranker recipe (StarSpace, MemNet, bi- and cross-ranker).

``zoo train light-bi`` and the thin scripts ``recipes/light_bi.py`` and its siblings name a recipe
(its YAML ships in the package, ``zoo/recipes/``); this module reads it (with
``--config`` files and dotted overrides), builds the :class:`LightDataModule` and the model,
trains with a Lightning Trainer (any ``trainer.*`` option: ``devices``, ``strategy=ddp``,
``num_nodes``, ``precision``), keeps the best epoch by validation R@1, tests on seen and
unseen test (metrics reduced over all ranks), exports the best model with
``save_pretrained`` to ``<run_dir>/pretrained`` and writes ``<run_dir>/results.json``.
A run directory that already holds ``checkpoints/last.ckpt`` resumes from it, when its
``config.yaml`` is this run's (:mod:`zoo.run_directory`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import lightning as L
from omegaconf import DictConfig, OmegaConf

from zoo.callbacks.finite_training import exit_unless_finite
from zoo.callbacks.run_legs import RunLegs, totals
from zoo.callbacks.train_clock import TrainClock
from zoo.experiment import (
    checkpointing,
    end_logging,
    fit_resuming,
    load_config,
    load_run_checkpoint,
    make_logger,
    make_trainer,
    start_run,
)
from zoo.files import atomic_write_text
from zoo.light.datamodule import LightDataModule
from zoo.light.sim import SimCorpus
from zoo.recipes import recipe_files
from zoo.factory import create_model
from zoo.run_directory import RunDirectory, one_line_write_errors
from zoo.training.model_options import model_options

log = logging.getLogger("zoo.training.light")
MONITOR = "valid/r_at_1"


def recipe_configs(recipe_file: str | Path) -> list[Path]:
    """The packaged YAML files of the recipe a ``recipes/light_*.py`` script is named for
    (``recipes/light_bi.py``: ``zoo/recipes/light_common.yaml`` then ``light_bi.yaml``)."""
    return recipe_files(Path(recipe_file).stem.replace("_", "-"))


def make_datamodule(config: DictConfig, collate) -> LightDataModule:
    data = config.data
    limit = OmegaConf.to_container(data.limit) if isinstance(data.limit, DictConfig) else data.limit
    return LightDataModule(task=data.task, features=data.features, source=data.source, data_dir=data.data_dir,
                           sim=SimCorpus(data.sim_preset), sim_dir=data.sim_dir, batch_size=data.batch_size,
                           eval_batch_size=data.eval_batch_size, collate=collate, num_workers=data.num_workers,
                           limit=limit)


def make_model(config: DictConfig):
    """The model, its options checked against its constructor first (:mod:`zoo.training.model_options`)."""
    spec, options = model_options(config)
    return create_model(spec.name, **options)


def load_best(trainer: L.Trainer, model, callbacks: list, run_dir: Path) -> str | None:
    """Load the best validation checkpoint's weights into ``model`` (on every rank)."""
    best = next((c.best_model_path for c in callbacks if getattr(c, "monitor", None) == MONITOR and c.best_model_path),
                None)
    if best:
        state = load_run_checkpoint(best, run_dir)
        model.on_load_checkpoint(state)
        model.load_state_dict(state["state_dict"])
    return best


def run(argv: Sequence[str], default_config: str | Path | Sequence[str | Path], extra_callbacks: Sequence = ()) -> dict[str, Any]:
    """Train, test and export one LIGHT ranker; returns the results written to results.json.

    A rerun of a finished run with the same configuration trains, tests and writes nothing:
    it returns the results the run wrote (see :mod:`zoo.run_directory` for reruns with
    another configuration)."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    config = load_config(default_config, argv)
    model_options(config)  # a bad model.name or option stops here, before the run directory is touched
    run_directory = start_run(config)
    try:
        with one_line_write_errors(run_directory.path):
            return _run(config, run_directory, extra_callbacks)
    finally:
        end_logging()
        run_directory.close()


def previous_results(run_directory: RunDirectory) -> dict[str, Any] | None:
    """The results.json this run's configuration wrote, if any."""
    path = run_directory.path / "results.json"
    try:
        results = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return results if isinstance(results, dict) and results.get("config_sha256") == run_directory.sha256 else None


def _run(config: DictConfig, run_directory: RunDirectory, extra_callbacks: Sequence) -> dict[str, Any]:
    run_dir = run_directory.path
    finished = run_directory.finished_results()
    if finished is not None:  # before the corpus and the model load: a no-op rerun takes seconds
        log.info("the run in %s had finished with this configuration; results.json is unchanged", run_dir)
        return finished
    model = make_model(config)
    datamodule = make_datamodule(config, model.collate)
    datamodule.prepare_data()
    model.setup_from_data(datamodule.dataset("train"))

    legs = RunLegs(config.data.batch_size, [vars(change) for change in run_directory.changes])
    callbacks = [*extra_callbacks, TrainClock(), legs,  # the clock: metrics.jsonl's train_seconds
                 *checkpointing(run_dir, config.checkpoint.every_n_train_steps, monitor=MONITOR, mode="max")]
    trainer = make_trainer(config.trainer, run_dir, callbacks, make_logger(config, run_dir, run_dir.name))
    fit_resuming(trainer, model, datamodule, run_dir)
    # Finished before, nothing trained or changed now: the results on disk are the run's, untouched.
    # (Decided on rank 0 and broadcast, so every rank takes the same branch.)
    done = None if legs.trained_here or run_directory.changes else previous_results(run_directory)
    done = trainer.strategy.broadcast(done, src=0)
    if done is not None:
        log.info("the run in %s had finished with this configuration; results.json is unchanged", run_dir)
        return done
    best = load_best(trainer, model, callbacks, run_dir)
    if config.get("export", True):  # before testing it: on every rank, which hold the same weights
        exit_unless_finite(model, run_dir / "pretrained")

    leg_list = legs.legs
    results: dict[str, Any] = {
        "model": config.model.name, "task": config.data.task, "features": config.data.features,
        "data": datamodule.label, **run_directory.results_record(), "best_checkpoint": best,
        # train_seconds and examples_seen: summed over the legs (a resumed run's every process);
        # examples_seen is what the optimiser saw, less than epochs x train_examples when
        # trainer.max_time ended an epoch early
        **totals(leg_list),
        "train_examples": len(datamodule.dataset("train")), "epochs": trainer.current_epoch,
        "global_step": trainer.global_step, "batch_size": config.data.batch_size, "world_size": trainer.world_size,
        "accelerator": type(trainer.accelerator).__name__, "precision": str(trainer.precision), "legs": leg_list,
    }
    if config.get("test", True):
        for metrics in trainer.test(model, datamodule=datamodule, verbose=False):
            results.update({k: round(float(v), 6) for k, v in metrics.items()})
    if trainer.is_global_zero:
        if config.get("export", True):
            model.save_pretrained(run_dir / "pretrained", record=run_directory.record())
            results["pretrained"] = str(run_dir / "pretrained")
        atomic_write_text(run_dir / "results.json", json.dumps(results, indent=2) + "\n")
        log.info("results: %s", json.dumps(results))
    return results
