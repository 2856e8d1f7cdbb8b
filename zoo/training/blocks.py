"""What a run of a Blocks objective builds (:func:`build`) and reports (:func:`report`) for the
runner, :mod:`zoo.training.runner` (``zoo train blocks-bandit``, ``recipes/blocks_policy.py``): the
block policy of Misra, Langford & Artzi (2017) trained by any registered objective (supervised,
the contextual bandit, REINFORCE, DQN, DAgger, SPO, an oracle planner) or a goal reader.

:func:`build` makes the :class:`BlocksDataModule` in the data mode the objective declares
(``data_mode``), the policy ``model.name`` names from ``model.options``, the loop that collects its
experience (``training_loop``, :mod:`zoo.callbacks.objective_loops`) and the evaluation on tuning
and dev (rollouts; a goal reader's goal error); the exported epoch is the best by the model's
``selection_metric``. A recipe with a ``start`` section starts the objective from a policy
(``start.init_from``) or a supervised warm-up trained here (``start.warmup_epochs``: the warm-up's
length, whatever ``trainer.max_epochs``, ``max_steps`` or ``max_time`` say, which bound the
objective's own training). Nothing here names an objective: a new one trains with no line added.
Load an export with ``zoo eval blocks --model <run_dir>/pretrained``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch.utilities import rank_zero_only
from omegaconf import DictConfig, OmegaConf

from zoo.blocks.datamodule import BlocksDataModule
from zoo.blocks.goals import goal_targets
from zoo.callbacks.epoch_metrics import read_epoch_metrics
from zoo.callbacks.goal_evaluation import GoalEvaluation
from zoo.callbacks.objective_loops import loop_callbacks
from zoo.callbacks.rollout_evaluation import RolloutEvaluation
from zoo.experiment import resume_path
from zoo.safe_writes import marker_record
from zoo.models.blocks import BlocksPolicy, BlocksSupervised
from zoo.models.blocks.network import NETWORK_OPTIONS
from zoo.models.blocks.network_config import BlocksNetworkConfig
from zoo.models.blocks.policy import load_training_checkpoint
from zoo.registry import ModelSpec
from zoo.run_directory import RunDirectory, config_sha256, identity, stage_sha256, take_stage
from zoo.training.runner import Build, model_options
from zoo.training.stage import export, fit_stage

log = logging.getLogger("zoo.training")
NEEDED = ("data_mode", "selection_metric")
"""What the runner reads of a Blocks model: which examples it learns from and which metric picks its export."""


def check_trainable(spec: ModelSpec) -> None:
    """One line naming what ``spec``'s class lacks, if the runner cannot train it."""
    lacking = [name for name in NEEDED if not getattr(spec.cls, name, None)]
    if lacking:
        raise SystemExit(f"zoo train cannot train {spec.name}: {spec.cls.__name__} has no {', '.join(lacking)}; "
                         "subclass zoo.models.blocks.BlocksPolicy, which has them")


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
        # the frames stacked: the network's default unless the recipe sets model.options.history
        history=OmegaConf.select(config, "model.options.history", default=BlocksNetworkConfig.history),
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


def warm_up(config: DictConfig, datamodule: BlocksDataModule, warmup_dir: Path, stage: str) -> None:
    """The supervised warm-up, a stage of its own in ``warmup_dir``: ``start.warmup_epochs`` whole
    epochs (the trainer section's ``max_steps`` and ``max_time`` bound the objective), its best
    epoch by tuning error exported with ``stage`` (its identity) in the export's marker."""
    policy = warmup_policy(config, datamodule)
    trainer_config = config.trainer.copy()
    trainer_config.max_epochs, trainer_config.max_steps = config.start.warmup_epochs, -1
    trainer_config.pop("max_time", None)
    fitted = fit_stage(config, policy, datamodule, warmup_dir, monitor=policy.selection_metric, mode="min",
                       evaluation=evaluation_callbacks(config, datamodule, warmup_dir),
                       trainer_config=trainer_config, stage="the supervised warm-up")
    fitted.load_best(policy)
    export(policy, fitted, {"config_sha256": stage}, "policy")
    fitted.trainer.strategy.barrier()  # every rank reads the export next


def build(config: DictConfig, run_directory: RunDirectory) -> Build:
    """The data in the objective's mode, the policy (from its start), the loop collecting its
    experience and the evaluation on tuning and dev; the export is the best by the model's
    ``selection_metric``."""
    spec, _ = model_options(config)
    mode = spec.cls.data_mode
    datamodule = make_datamodule(config, mode=mode)
    policy = initial_policy(config, run_directory.path, datamodule.vocabulary.words)
    if mode == "episodes":  # rollouts encode instructions with the policy's own words (a start may bring them)
        datamodule.vocabulary = policy.vocabulary
    loop = config.get("loop")
    loops = loop_callbacks(policy, datamodule, OmegaConf.to_container(loop) if loop is not None else {}, config.seed)
    trainer_config = config.trainer.copy()
    if not policy.automatic_optimization:  # the policy clips each of its own steps
        trainer_config.gradient_clip_val = None
    return Build(policy, datamodule, monitor=policy.selection_metric, mode="min", callbacks=list(loops),
                 evaluation=evaluation_callbacks(config, datamodule, run_directory.path),
                 trainer_config=trainer_config, what="policy")


def report(config: DictConfig, build: Build, trainer, best_epoch: int | None) -> dict[str, Any]:
    """What a Blocks run's results.json adds: the exported epoch and its figures (its
    metrics.jsonl row)."""
    run_dir = Path(trainer.default_root_dir)
    rows = read_epoch_metrics(run_dir) if (run_dir / "metrics.jsonl").is_file() else []
    chosen = next((row for row in rows if row["epoch"] == best_epoch), rows[-1] if rows else {})
    return {"exported_epoch": chosen.get("epoch"),
            "metrics": {key: value for key, value in chosen.items() if "/" in key}}


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
            warm_up(config, make_datamodule(config, mode="steps"), warmup_dir, stage)
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
