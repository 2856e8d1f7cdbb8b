"""The one runner behind ``zoo train NAME``, the thin scripts ``recipes/*.py`` and the tests:
``run(recipe, overrides) -> RunResult`` for a model of either domain.

A run reads the recipe (a packaged name such as ``light-bi-ranker``, a recipe YAML of one's own,
or a list of YAML files merged in order; then ``--config`` files and dotted overrides), checks
``model.options`` against the registered class's constructor, takes the run directory (its
``config.yaml`` and lock), and, unless the run had already finished with this configuration,
asks the model's domain (:mod:`zoo.training.light`, :mod:`zoo.training.blocks`: the domain the
class declares) to ``build`` the model, its data and its callbacks; then it fits, resuming from
``checkpoints/last.ckpt``, reloads the best epoch, exports it with ``save_pretrained`` to
``<run_dir>/pretrained`` and writes ``<run_dir>/results.json`` (what the domain reports beside
what every run records). A rerun that trains nothing leaves every file as it was.
"""

from __future__ import annotations

import difflib
import importlib
import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from zoo.callbacks.run_legs import totals
from zoo.experiment import end_logging, load_config, start_run
from zoo.factory import model_spec
from zoo.safe_writes import atomic_write_text, marker_record
from zoo.recipes import RECIPES_DIR, TINY_DIR, recipe_files
from zoo.registry import ModelSpec
from zoo.run_directory import RunDirectory, one_line_write_errors
from zoo.training.stage import export, fit_stage

__all__ = ["Build", "RunResult", "model_options", "recipe_paths", "run"]

log = logging.getLogger("zoo.training")


@dataclass(frozen=True)
class RunResult:
    """What a run leaves: its directory, its export (None when the recipe exports nothing), the
    contents of its ``results.json``, and whether this call trained (False: the run had finished
    with this configuration and nothing was trained, tested or written)."""

    run_dir: Path
    pretrained: Path | None
    results: dict[str, Any]
    trained: bool

    @property
    def metrics(self) -> dict[str, float]:
        """Every figure ``results.json`` holds (``valid/r_at_1``, ``test/r_at_1``, ``tuning/mean_error``, ...)."""
        figures = {key: value for key, value in self.results.items() if "/" in key}
        return {**figures, **(self.results.get("metrics") or {})}


@dataclass
class Build:
    """What a domain builds for a run: the model and its data; ``callbacks`` that run before the
    run's own (a loop collecting experience), ``evaluation`` that logs ``monitor``, which picks
    the exported epoch (``mode``: min or max); the Trainer's arguments if the domain changes the
    recipe's; ``what`` the export is called in the log."""

    model: Any
    datamodule: Any
    monitor: str
    mode: str
    callbacks: list
    evaluation: list
    trainer_config: DictConfig | None = None
    what: str = "model"


def recipe_paths(recipe: str | os.PathLike | Sequence[str | os.PathLike], tiny: bool = False) -> list[Path]:
    """The YAML files of ``recipe`` in merge order: a packaged recipe's name (an old name says its
    new one), a recipe file of one's own (``*.yaml``: merged over its model's domain's common
    file, so it names only ``model`` and what it changes), or a list of files taken as they are.
    ``tiny``: then the domain's and the recipe's ``zoo train --tiny`` overlays."""
    if not isinstance(recipe, (str, os.PathLike)):
        return [Path(path) for path in recipe]
    path = Path(recipe)
    if path.suffix not in (".yaml", ".yml"):
        return recipe_files(str(recipe), tiny=tiny)
    if not path.is_file():
        raise FileNotFoundError(f"no recipe file {str(path)!r}; give a recipe name (zoo train --list) or a YAML file")
    name = OmegaConf.select(OmegaConf.load(path), "model.name", default=None)
    if not isinstance(name, str):
        raise ValueError(f"{path}: a recipe file names its model (model.name: light-..., blocks-...)")
    domain = model_class_of(name).domain
    files = [RECIPES_DIR / f"{domain}_common.yaml", path]
    return files + ([TINY_DIR / f"{domain}.yaml"] if tiny else [])


def model_class_of(name: str) -> type:
    try:
        return model_spec(name).cls
    except KeyError as error:
        raise SystemExit(f"model.name: {error.args[0]}") from None


def model_options(config: DictConfig) -> tuple[ModelSpec, dict]:
    """The spec registered as ``model.name`` and ``model.options`` as a plain dict, every option
    a constructor argument of that class (SystemExit with one line otherwise, before any data is
    read: a typo names the closest argument)."""
    options = OmegaConf.to_container(config.model.options, resolve=True) if config.model.get("options") else {}
    try:
        spec = model_spec(config.model.name)
    except KeyError as error:
        raise SystemExit(f"model.name: {error.args[0]}") from None
    accepted = spec.cls.config_keys()
    for key in options:
        if accepted is not None and key not in accepted:
            close = difflib.get_close_matches(key, sorted(accepted), n=1)
            hint = f"; did you mean 'model.options.{close[0]}'?" if close else ""
            raise SystemExit(f"unknown config key 'model.options.{key}': {config.model.name} takes no such option{hint}")
    return spec, options


def domain_runner(spec: ModelSpec):
    """The module that builds runs of the model's domain (``zoo.training.<domain>``), after it
    has checked that the class can be trained (one line naming what it lacks otherwise)."""
    domain = getattr(spec.cls, "domain", "")
    try:
        runner = importlib.import_module(f"zoo.training.{domain}") if domain else None
    except ModuleNotFoundError:
        runner = None
    if runner is None or not hasattr(runner, "build"):
        raise SystemExit(f"{spec.name} ({spec.cls.__name__}) declares no domain zoo trains (domain = 'light' or "
                         f"'blocks'; got {domain!r})")
    runner.check_trainable(spec)
    return runner


def run(recipe: str | os.PathLike | Sequence[str | os.PathLike], overrides: Sequence[str] = (),
        callbacks: Sequence = ()) -> RunResult:
    """Train, evaluate and export the model of ``recipe`` (see :func:`recipe_paths`) with
    ``overrides`` (``key.sub=value``, ``--config FILE``, ``--verbose``, ``--help``);
    ``callbacks``: Lightning callbacks that observe or interrupt the fit (tests, notebooks)."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        files = recipe_paths(recipe)
    except KeyError as error:  # an unknown recipe name: one line naming the recipes
        raise SystemExit(error.args[0]) from None
    config = load_config(files, overrides)
    spec, _ = model_options(config)  # a bad model.name or option stops here, before the run directory is touched
    runner = domain_runner(spec)
    run_directory = start_run(config)  # the threads (zoo.threads), the seeds, the directory's lock
    try:
        with one_line_write_errors(run_directory.path):
            return _run(config, runner, run_directory, list(callbacks))
    finally:
        end_logging()
        run_directory.close()


def _run(config: DictConfig, runner, run_directory: RunDirectory, callbacks: list) -> RunResult:
    run_dir, exporting = run_directory.path, bool(config.get("export", True))
    finished = run_directory.finished_results()
    if finished is not None:  # before the data and the model load: a no-op rerun takes seconds
        return _unchanged(run_dir, finished, exporting)
    build = runner.build(config, run_directory)
    changes = [vars(change) for change in run_directory.changes]
    fitted = fit_stage(config, build.model, build.datamodule, run_dir, monitor=build.monitor, mode=build.mode,
                       callbacks=[*build.callbacks, *callbacks], evaluation=build.evaluation, changes=changes,
                       trainer_config=build.trainer_config, stage=f"the {config.model.name} run")
    trainer = fitted.trainer
    # Finished before, nothing trained or changed now: the files on disk are the run's, untouched.
    # (Decided on rank 0 and broadcast, so every rank takes the same branch.)
    done = None if fitted.legs.trained_here or changes else _previous_results(run_directory, exporting)
    done = trainer.strategy.broadcast(done, src=0)
    if done is not None:
        return _unchanged(run_dir, done, exporting)
    best_epoch = fitted.load_best(build.model)
    legs = fitted.legs.legs
    results: dict[str, Any] = {
        "model": config.model.name, **run_directory.results_record(), "best_checkpoint": fitted.best,
        # train_seconds and examples_seen: summed over the legs (a resumed run's every process)
        **totals(legs), "epochs": trainer.current_epoch, "global_step": trainer.global_step,
        "batch_size": config.data.batch_size, "world_size": trainer.world_size,
        "accelerator": type(trainer.accelerator).__name__, "precision": str(trainer.precision), "legs": legs,
        **runner.report(config, build, trainer, best_epoch),  # on every rank: a test is reduced over all of them
    }
    pretrained = export(build.model, fitted, run_directory.record(), build.what) if exporting else None
    if pretrained is not None:
        results["pretrained"] = str(pretrained)
    if trainer.is_global_zero:
        atomic_write_text(run_dir / "results.json", json.dumps(results, indent=2) + "\n")
        log.info("results: %s", run_dir / "results.json")
    trainer.strategy.barrier()  # other ranks may read the export next
    return RunResult(run_dir, pretrained, results, trained=True)


def _previous_results(run_directory: RunDirectory, exporting: bool) -> dict[str, Any] | None:
    """The results.json this run's configuration wrote, if any, with its export."""
    try:
        results = json.loads((run_directory.path / "results.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(results, dict) or results.get("config_sha256") != run_directory.sha256:
        return None
    if exporting and not run_directory.made_here(run_directory.path / "pretrained"):
        return None
    return results


def _unchanged(run_dir: Path, results: dict, exporting: bool) -> RunResult:
    log.info("the run in %s had finished with this configuration; its export and results.json are unchanged", run_dir)
    pretrained = run_dir / "pretrained" if exporting and marker_record(run_dir / "pretrained") else None
    return RunResult(run_dir, pretrained, results, trained=False)
