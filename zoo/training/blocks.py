"""The training script behind ``zoo train blocks-*`` and ``recipes/blocks_policy.py``: the block
policy of Misra, Langford & Artzi (2017), trained by any registered objective (supervised, the
contextual bandit, REINFORCE, DQN, DAgger, an oracle planner).

``main`` reads the recipe (``zoo/recipes/blocks_common.yaml`` and the objective's
``blocks_<objective>.yaml``, with ``--config`` files and dotted overrides), builds the
policy named by ``model.name`` from ``model.options`` (options checked against its
constructor), the :class:`BlocksDataModule` in the data mode the objective declares
(``BlocksPolicy.data_mode``), the loop that collects its experience
(``BlocksPolicy.training_loop``, :mod:`zoo.callbacks.objective_loops`), rollout evaluation
on tuning and dev, checkpoints and the Trainer, and fits. A recipe with a ``start`` section
starts the objective from a policy (``start.init_from``) or a supervised warm-up trained here
(``start.warmup_epochs``: the warm-up's length, whatever ``trainer.max_epochs``, ``max_steps`` or
``max_time`` say, which bound the objective's own training). Nothing here names an objective: a new
one trains with no line added. A stage that resumes from its checkpoint says where it stopped; a
loss or weight gone inf or nan stops the run in one line and nothing is exported.
Runs resume from ``<run_dir>/checkpoints/last.ckpt`` when it exists; the best policy by
tuning-set error is exported with ``save_pretrained`` to ``<run_dir>/pretrained`` (load it
with ``zoo eval blocks --model <run_dir>/pretrained``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import torch
from lightning.pytorch.utilities import rank_zero_only
from omegaconf import DictConfig, OmegaConf

from zoo.blocks.datamodule import BlocksDataModule
from zoo.blocks.goals import goal_targets
from zoo.callbacks.goal_evaluation import GoalEvaluation
from zoo.callbacks.finite_training import exit_unless_finite
from zoo.callbacks.objective_loops import loop_callbacks
from zoo.callbacks.rollout_evaluation import RolloutEvaluation
from zoo.callbacks.run_legs import RunLegs
from zoo.callbacks.train_clock import TrainClock
from zoo.experiment import (
    checkpointing,
    end_logging,
    fit_resuming,
    load_config,
    load_run_checkpoint,
    make_logger,
    make_trainer,
    resume_path,
    start_run,
)
from zoo.files import marker_record
from zoo.models.blocks import BlocksPolicy, BlocksSupervised
from zoo.models.blocks.network import NETWORK_OPTIONS
from zoo.models.blocks.policy import load_training_checkpoint
from zoo.recipes import recipe_files
from zoo.run_directory import RunDirectory, config_sha256, identity, one_line_write_errors, stage_sha256, take_stage
from zoo.training.model_options import model_options

DEFAULT_RECIPE = "blocks-supervised"
"""The recipe ``recipes/blocks_policy.py`` runs unless ``model.name=blocks-OBJECTIVE`` picks another."""
log = logging.getLogger("blocks_policy")


def blocks_recipe_files(argv: Sequence[str], recipe: str | None = None) -> list[Path]:
    """The packaged YAML of the recipe: ``recipe`` (``zoo train blocks-bandit``), else the one a
    ``model.name=blocks-X`` override names (``python recipes/blocks_policy.py model.name=blocks-bandit``),
    else the supervised one."""
    if recipe is None:
        named = [arg.split("=", 1)[1] for arg in argv if arg.startswith("model.name=")]
        recipe = named[-1] if named else DEFAULT_RECIPE
    try:
        return recipe_files(recipe)
    except KeyError as error:
        raise SystemExit(f"model.name: {error.args[0]}") from None


def make_datamodule(config: DictConfig, mode: str) -> BlocksDataModule:
    try:
        return _datamodule(config, mode)
    except ValueError as error:  # a bad data setting: one line, before any work
        raise SystemExit(f"data: {error}") from None


def _datamodule(config: DictConfig, mode: str) -> BlocksDataModule:
    data = config.data
    datamodule = BlocksDataModule(
        data_dir=data.data_dir, source=data.source, download=data.download, batch_size=data.batch_size,
        num_workers=data.num_workers, seed=config.seed, mode=mode,
        procedural_sizes=OmegaConf.to_container(data.procedural_sizes) if data.procedural_sizes else None,
        episodes_per_batch=data.episodes_per_batch, supervised_schedule=data.supervised_schedule,
        replay_capacity=data.replay_capacity,
        limit=OmegaConf.to_container(data.limit) if isinstance(data.limit, DictConfig) else data.limit,
    )
    datamodule.prepare_data()
    datamodule.setup("fit")
    return datamodule


def evaluation_callbacks(config: DictConfig, datamodule: BlocksDataModule, run_dir: Path) -> list:
    """What every validation measures: a policy's greedy rollouts on tuning and dev; a goal
    reader's goal error there (and on dev what the expert makes of its reading)."""
    dev = datamodule.dev_examples
    if config.evaluation.dev_limit:
        dev = dev[: config.evaluation.dev_limit]
    every = config.evaluation.dev_every_n_epochs
    if datamodule.hparams.mode == "goals":
        dev_targets = goal_targets(dev, datamodule.renderer, datamodule.vocabulary)
        return [GoalEvaluation(datamodule.goal_targets("tuning"), datamodule.tuning_examples, "tuning", every),
                GoalEvaluation(dev_targets, dev, "dev", every, carry_out=True)]
    return [
        RolloutEvaluation(datamodule.tuning_examples, "tuning", every, renderer=datamodule.renderer),
        RolloutEvaluation(dev, "dev", every, gifs=config.evaluation.gifs, gif_dir=run_dir / "rollouts",
                          renderer=datamodule.renderer),
    ]


def fit(config: DictConfig, policy: BlocksPolicy, datamodule: BlocksDataModule, run_dir: Path,
        extra_callbacks: list = (), max_epochs: int | None = None, record: dict | None = None,
        changes: Sequence[dict] = (), results: dict | None = None, stage: str | None = None) -> BlocksPolicy:
    """Train with resumption and export the best policy (by tuning-set error) to run_dir/pretrained,
    its marker keeping ``record`` (the configuration hash it came from). A rerun that trains
    nothing leaves an export of the same configuration as it is. ``changes``: the allowed
    configuration changes this process made, recorded in its leg; ``results``: write
    ``run_dir/results.json`` (the run's legs and its best epoch's figures) with this record of
    the run (:meth:`RunDirectory.results_record`). ``max_epochs``: the
    length of a stage of its own (the warm-up), which then ignores the trainer section's
    ``max_steps`` and ``max_time`` too: they bound the objective's stage, the one a resumed run
    may lengthen. ``stage``: what a resumed fit calls itself ("the supervised warm-up stopped at
    step 3 of 12; continuing it"). Weights that are not finite are never exported."""
    legs = RunLegs(config.data.batch_size, changes)
    callbacks = [*extra_callbacks, TrainClock(), legs, *evaluation_callbacks(config, datamodule, run_dir),
                 *checkpointing(run_dir, config.checkpoint.every_n_train_steps, monitor=policy.selection_metric)]
    trainer_config = config.trainer.copy()
    if max_epochs is not None:  # a stage of its own length: the trainer's limits are the objective's
        trainer_config.max_epochs, trainer_config.max_steps = max_epochs, -1
        trainer_config.pop("max_time", None)
    if not policy.automatic_optimization:  # the policy clips each of its own steps
        trainer_config.gradient_clip_val = None
    trainer = make_trainer(trainer_config, run_dir, callbacks, make_logger(config, run_dir, run_dir.name),
                           stage=stage or f"the {config.model.name} run")
    fit_resuming(trainer, policy, datamodule, run_dir)
    best = next((c.best_model_path for c in callbacks if getattr(c, "monitor", None) and c.best_model_path), None)
    best_epoch = None
    if best:
        saved = load_run_checkpoint(best, run_dir)
        policy.load_state_dict(saved["state_dict"])
        best_epoch = saved.get("epoch")
    exit_unless_finite(policy, run_dir / "pretrained")  # on every rank: each holds the same weights
    exported = record is not None and marker_record(run_dir / "pretrained").get("config_sha256") == record["config_sha256"]
    if trainer.is_global_zero and (legs.trained_here or not exported):
        policy.save_pretrained(run_dir / "pretrained", record=record)
        log.info("exported %s policy to %s", "best" if best else "last", run_dir / "pretrained")
    elif trainer.is_global_zero:
        log.info("the run in %s had finished with this configuration; its export is unchanged", run_dir)
    if results is not None and trainer.is_global_zero and (legs.trained_here or changes
                                                           or not (run_dir / "results.json").is_file()):
        write_results(config, run_dir, results, best, best_epoch, trainer, legs.legs)
    trainer.strategy.barrier()  # other ranks may read the export next (the bandit's warm start)
    return policy


def write_results(config: DictConfig, run_dir: Path, record: dict, best: str | None, epoch: int | None, trainer,
                  legs: list[dict]) -> None:
    """``run_dir/results.json``: what the run is (model, configuration hash), what trained it (every
    leg, their totals) and the figures of the epoch it exported (its metrics.jsonl row)."""
    import json

    from zoo.callbacks.epoch_metrics import read_epoch_metrics
    from zoo.callbacks.run_legs import totals
    from zoo.files import atomic_write_text

    rows = read_epoch_metrics(run_dir) if (run_dir / "metrics.jsonl").is_file() else []
    chosen = next((row for row in rows if row["epoch"] == epoch), rows[-1] if rows else {})
    results = {"model": config.model.name, **record, "best_checkpoint": best, "epochs": trainer.current_epoch,
               "global_step": trainer.global_step, "batch_size": config.data.batch_size,
               "world_size": trainer.world_size, **totals(legs), "legs": legs,
               "exported_epoch": chosen.get("epoch"), "metrics": {key: value for key, value in chosen.items()
                                                                  if "/" in key},
               "pretrained": str(run_dir / "pretrained")}
    atomic_write_text(run_dir / "results.json", json.dumps(results, indent=2) + "\n")
    log.info("results: %s", run_dir / "results.json")


def split_options(options: dict) -> tuple[dict, dict]:
    """``model.options`` as (the network's sizes, the objective's settings); ``init`` counts as
    both: it is also the scheme of the direction head a start re-initialises."""
    network = {key: value for key, value in options.items() if key in NETWORK_OPTIONS}
    settings = {key: value for key, value in options.items() if key not in NETWORK_OPTIONS or key == "init"}
    return network, settings


WARMUP_EXCLUDED = ("model.name", "start", "loop", "data.episodes_per_batch", "trainer.max_epochs", "trainer.max_steps",
                   "trainer.max_time")
"""What does not determine the supervised warm-up (the objective, its start and loop, the episodes
it rolls out, the objective's schedule, which the warm-up ignores); the objective's own settings in
``model.options`` neither."""


def warmup_sha256(config: DictConfig) -> str:
    """The warm-up's identity: every setting it is trained from (seed, data, network sizes,
    its learning rate, trainer, evaluation) and its number of epochs; changing any of them
    means another warm-up."""
    settings = identity(config)
    network, _ = split_options(settings["model"].get("options") or {})
    settings["model"] = {"options": network}
    return config_sha256({"settings": stage_sha256(settings, WARMUP_EXCLUDED),
                          "warmup_epochs": config.start.warmup_epochs,
                          "warmup_learning_rate": config.start.warmup_learning_rate})


def warmup_policy(config: DictConfig, datamodule: BlocksDataModule) -> BlocksSupervised:
    network, _ = split_options(OmegaConf.to_container(config.model.options, resolve=True))
    return BlocksSupervised(datamodule.vocabulary.words, **network, learning_rate=config.start.warmup_learning_rate)


def initial_policy(config: DictConfig, run_dir: Path, vocabulary: list[str]) -> BlocksPolicy:
    """The policy ``model`` names, from ``model.options``. With a ``start`` section, the
    paper's initialisation: a policy (``start.init_from``: a pretrained dir, a released name or a
    ``.ckpt``, or a supervised warm-up trained here for ``start.warmup_epochs``) under this
    objective with these settings, its direction head re-initialised when
    ``start.reset_direction_head``; with neither, fresh weights (the bandit's "w/o supervised
    init" ablation, DAgger from scratch). A run resuming from its own ``last.ckpt`` takes the
    policy from there, so the start it was initialised from need not exist any more (a fresh
    clone carries only the run's state, ``tools/carry_runs.py``).

    The warm-up is a stage of its own, in ``run_dir/warmup``: it trains ``start.warmup_epochs``
    whole epochs, whatever the trainer section's ``max_epochs``, ``max_steps`` or ``max_time``
    (they bound the objective, so ``trainer.max_steps=3`` for a first look still starts it from
    a whole warm-up, and a resumed run may lengthen the objective without touching the start it
    had). Its export is made only when those epochs are done; a warm-up stopped before (a
    signal, a lost machine) is continued from its own ``last.ckpt`` by the rerun, which says so
    in one line ("the supervised warm-up stopped at step 3 of 12; continuing it") before the
    objective starts from it."""
    spec, options = model_options(config)
    objective = spec.cls
    start = config.get("start")
    if start is None:
        return objective(vocabulary, **options)
    _, settings = split_options(options)
    resuming = resume_path(run_dir)
    if resuming:  # the run's own last.ckpt holds every weight: its start (init_from) may be gone by now
        return load_training_checkpoint(resuming, **settings).train()
    warmup_epochs = start.get("warmup_epochs", 0)
    if start.init_from:
        source = str(start.init_from)
        if source.endswith(".ckpt"):
            policy = load_training_checkpoint(source)
        else:  # a directory that exists is a directory, whatever its name; anything else, a released name
            policy = BlocksPolicy.from_pretrained(Path(source) if Path(source).is_dir() else source)
        policy = policy.to_objective(objective, **settings)
        policy = match_previous_action_input(policy, options.get("use_previous_action", True), config.seed)
    elif warmup_epochs > 0:
        warmup_dir = run_dir / "warmup"
        stage = warmup_sha256(config)
        if rank_zero_only.rank == 0:
            take_stage(warmup_dir, stage, "the supervised warm-up")
        if marker_record(warmup_dir / "pretrained").get("config_sha256") != stage:  # reused only when it is this one
            steps = make_datamodule(config, mode="steps")
            fit(config, warmup_policy(config, steps), steps, warmup_dir, max_epochs=warmup_epochs,
                record={"config_sha256": stage}, stage="the supervised warm-up")
        policy = BlocksPolicy.from_pretrained(warmup_dir / "pretrained").to_objective(objective, **settings)
    else:
        return objective(vocabulary, **options)
    if start.get("reset_direction_head", False):
        torch.manual_seed(config.seed)
        policy.reset_direction_head()
    return policy.train()


def match_previous_action_input(policy: BlocksPolicy, wanted: bool, seed: int) -> BlocksPolicy:
    """The start with the previous-action input the config asks for: a start trained without
    it (no exposure bias, docs/blocks_environment.md §6.4 supervised) gets it added for the bandit; one trained with
    it cannot lose it, so that is an error rather than a silent switch."""
    if policy.hparams.use_previous_action == wanted:
        return policy
    if not wanted:
        raise SystemExit("start.init_from reads the previous action but model.options.use_previous_action=false; "
                         "start from a policy trained without the input")
    torch.manual_seed(seed)
    log.info("adding the previous-action input to the start (new embeddings, the rest kept)")
    return policy.with_previous_action_input()


def main(argv: list[str], extra_callbacks: list = (), default_config: str | Path | Sequence[str | Path] | None = None,
         recipe: str | None = None) -> int:
    """Run the recipe (``recipe``, a ``model.name=`` override's, or the supervised one; or the
    YAML files ``default_config``); ``extra_callbacks`` lets tests and notebooks observe or interrupt it."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    config = load_config(default_config or blocks_recipe_files(argv, recipe), argv)
    model_options(config)  # a bad model.name or option stops here, before the run directory is touched
    run_directory = start_run(config)  # batched: the idle cores (zoo.threads)
    try:
        with one_line_write_errors(run_directory.path):
            return _main(config, run_directory, list(extra_callbacks))
    finally:
        end_logging()
        run_directory.close()


def _main(config: DictConfig, run_directory: RunDirectory, extra_callbacks: list) -> int:
    run_dir, record = run_directory.path, run_directory.record()
    if run_directory.finished_results() is not None:  # before the data load: a no-op rerun takes seconds
        log.info("the run in %s had finished with this configuration; its export and results.json are unchanged",
                 run_dir)
        return 0
    spec, _ = model_options(config)
    mode = spec.cls.data_mode
    datamodule = make_datamodule(config, mode=mode)
    policy = initial_policy(config, run_dir, datamodule.vocabulary.words)
    if mode == "episodes":  # rollouts encode instructions with the policy's own words (a start may bring them)
        datamodule.vocabulary = policy.vocabulary
    loop = config.get("loop")
    loops = loop_callbacks(policy, datamodule, OmegaConf.to_container(loop) if loop is not None else {}, config.seed)
    fit(config, policy, datamodule, run_dir, extra_callbacks=[*loops, *extra_callbacks], record=record,
        changes=[vars(change) for change in run_directory.changes], results=run_directory.results_record())
    return 0
