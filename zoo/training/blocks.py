"""The training script behind ``recipes/blocks_policy.py``: the block policy of Misra, Langford
& Artzi (2017), trained supervised, with the contextual bandit, REINFORCE, DQN, DAgger or an oracle planner.

``main`` reads the recipe's YAML (with ``--config`` files and dotted overrides), builds the
:class:`BlocksDataModule`, the policy (for the RL methods: its supervised initialisation),
the callbacks (rollout evaluation on tuning and dev, the bandit or DQN loop, checkpoints) and
the Trainer, and fits. Runs resume from ``<run_dir>/checkpoints/last.ckpt`` when it exists;
the best policy by tuning-set error is exported with ``save_pretrained`` to
``<run_dir>/pretrained`` (load it with ``zoo eval blocks --model <run_dir>/pretrained``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import torch
from lightning.pytorch.utilities import rank_zero_only
from omegaconf import DictConfig, OmegaConf

from zoo.blocks.datamodule import BlocksDataModule
from zoo.blocks.reward import RewardConfig
from zoo.callbacks import ContextualBanditLoop, DQNLoop, ExpertLoop
from zoo.callbacks.rollout_evaluation import RolloutEvaluation
from zoo.callbacks.run_legs import RunLegs
from zoo.callbacks.train_clock import TrainClock
from zoo.experiment import (
    checkpointing,
    fit_resuming,
    load_config,
    load_run_checkpoint,
    make_logger,
    make_trainer,
    resume_path,
    start_run,
)
from zoo.files import marker_record
from zoo.models.blocks import BlocksDagger, BlocksDQN, BlocksPlanner, BlocksPolicy, BlocksSupervised, objective_class
from zoo.models.blocks.policy import load_training_checkpoint
from zoo.run_directory import RunDirectory, config_sha256, identity, one_line_write_errors, stage_sha256, take_stage

DEFAULT_CONFIG = Path(__file__).resolve().parents[2] / "recipes" / "blocks_policy.yaml"
"""The recipe's YAML in a clone of the repository (``recipes/`` is not part of the wheel)."""
RL_METHODS = ("bandit", "reinforce", "dqn")
log = logging.getLogger("blocks_policy")


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
        episodes_per_batch=config.bandit.episodes_per_batch, supervised_schedule=data.supervised_schedule,
        replay_capacity=data.replay_capacity,
        limit=OmegaConf.to_container(data.limit) if isinstance(data.limit, DictConfig) else data.limit,
    )
    datamodule.prepare_data()
    datamodule.setup("fit")
    return datamodule


def evaluation_callbacks(config: DictConfig, datamodule: BlocksDataModule, run_dir: Path) -> list:
    dev = datamodule.dev_examples
    if config.evaluation.dev_limit:
        dev = dev[: config.evaluation.dev_limit]
    every = config.evaluation.dev_every_n_epochs
    return [
        RolloutEvaluation(datamodule.tuning_examples, "tuning", every, renderer=datamodule.renderer),
        RolloutEvaluation(dev, "dev", every, gifs=config.evaluation.gifs, gif_dir=run_dir / "rollouts",
                          renderer=datamodule.renderer),
    ]


def fit(config: DictConfig, policy: BlocksPolicy, datamodule: BlocksDataModule, run_dir: Path,
        extra_callbacks: list = (), max_epochs: int | None = None, record: dict | None = None) -> BlocksPolicy:
    """Train with resumption and export the best policy (by tuning-set error) to run_dir/pretrained,
    its marker keeping ``record`` (the configuration hash it came from). A rerun that trains
    nothing leaves an export of the same configuration as it is."""
    legs = RunLegs(config.data.batch_size)
    callbacks = [*extra_callbacks, TrainClock(), legs, *evaluation_callbacks(config, datamodule, run_dir),
                 *checkpointing(run_dir, config.checkpoint.every_n_train_steps, monitor="tuning/mean_error")]
    trainer_config = config.trainer.copy()
    if max_epochs is not None:
        trainer_config.max_epochs = max_epochs
    if not policy.automatic_optimization:  # the policy clips each of its own steps
        trainer_config.gradient_clip_val = None
    trainer = make_trainer(trainer_config, run_dir, callbacks, make_logger(config.logger, run_dir, run_dir.name))
    fit_resuming(trainer, policy, datamodule, run_dir)
    best = next((c.best_model_path for c in callbacks if getattr(c, "monitor", None) and c.best_model_path), None)
    if best:
        state = load_run_checkpoint(best, run_dir)["state_dict"]
        policy.load_state_dict(state)
    exported = record is not None and marker_record(run_dir / "pretrained").get("config_sha256") == record["config_sha256"]
    if trainer.is_global_zero and (legs.trained_here or not exported):
        policy.save_pretrained(run_dir / "pretrained", record=record)
        log.info("exported %s policy to %s", "best" if best else "last", run_dir / "pretrained")
    elif trainer.is_global_zero:
        log.info("the run in %s had finished with this configuration; its export is unchanged", run_dir)
    trainer.strategy.barrier()  # other ranks may read the export next (the bandit's warm start)
    return policy


def supervised_policy(config: DictConfig, datamodule: BlocksDataModule) -> BlocksPolicy:
    return BlocksSupervised(datamodule.vocabulary.words, **config.model, learning_rate=config.supervised.learning_rate)


WARMUP_EXCLUDED = ("method", "bandit", "dqn", "dagger", "trainer.max_epochs")
"""What does not determine the supervised warm-up (the RL stage's settings, the RL schedule's length)."""


def warmup_sha256(config: DictConfig) -> str:
    """The warm-up's identity: every setting it is trained from (seed, data, model sizes,
    supervised settings, trainer, evaluation) and its number of epochs; changing any of them
    means another warm-up."""
    return config_sha256({"settings": stage_sha256(identity(config), WARMUP_EXCLUDED),
                          "warmup_epochs": config.bandit.warmup_epochs})


def initial_rl_policy(config: DictConfig, run_dir: Path, vocabulary: list[str]) -> BlocksPolicy:
    """The paper's initialisation: a supervised policy (trained here for ``warmup_epochs`` or
    loaded from ``init_from``) whose direction head is then re-initialised. With
    ``warmup_epochs=0`` and no ``init_from``, a random initialisation (the "w/o supervised
    init" ablation). DQN always starts from random weights: its Q head has no softmax to
    inherit. A run resuming from its own ``last.ckpt`` takes the policy from there, so the
    start it was initialised from need not exist any more (a fresh clone carries only the
    run's state, ``tools/carry_runs.py``)."""
    bandit = config.bandit
    if config.method == "dqn":
        return BlocksDQN(vocabulary, **config.model, learning_rate=config.dqn.learning_rate,
                         discount=config.dqn.discount)
    objective = objective_class(config.method)
    overrides = dict(learning_rate=bandit.learning_rate,
                     entropy_coefficient=bandit.entropy_coefficient, episodes_per_update=bandit.episodes_per_update,
                     update_weighting=bandit.update_weighting, reward_baseline=bandit.reward_baseline,
                     loss_form=bandit.loss_form, gradient_clip_algorithm=bandit.gradient_clip_algorithm,
                     gradient_clip_val=config.trainer.gradient_clip_val, init=config.model.init)
    resuming = resume_path(run_dir)
    if resuming:  # the run's own last.ckpt holds every weight: its start (init_from) may be gone by now
        return load_training_checkpoint(resuming, **overrides).train()
    if bandit.init_from:
        source = Path(bandit.init_from)
        if source.suffix == ".ckpt":
            policy = load_training_checkpoint(source)
        else:
            policy = BlocksPolicy.from_pretrained(source)
        policy = policy.to_objective(objective, **overrides)
        policy = match_previous_action_input(policy, config.model.use_previous_action, config.seed)
    elif bandit.warmup_epochs > 0:
        warmup_dir = run_dir / "warmup"
        stage = warmup_sha256(config)
        if rank_zero_only.rank == 0:
            take_stage(warmup_dir, stage, "the supervised warm-up")
        if marker_record(warmup_dir / "pretrained").get("config_sha256") != stage:  # reused only when it is this one
            steps = make_datamodule(config, mode="steps")
            fit(config, supervised_policy(config, steps), steps, warmup_dir, max_epochs=bandit.warmup_epochs,
                record={"config_sha256": stage})
        policy = BlocksPolicy.from_pretrained(warmup_dir / "pretrained").to_objective(objective, **overrides)
    else:
        return objective(vocabulary, **{**config.model, **overrides})
    if bandit.reset_direction_head:
        torch.manual_seed(config.seed)
        policy.reset_direction_head()
    return policy.train()


def initial_dagger_policy(config: DictConfig, run_dir: Path, vocabulary: list[str]) -> BlocksDagger:
    """DAgger's learner: the run's own ``last.ckpt`` when resuming, else the policy in
    ``dagger.init_from`` (a pretrained dir, a released name or a ``.ckpt``), else a fresh
    network (with β = 1 at first, DAgger then starts as supervised learning on the expert's states)."""
    settings = dict(learning_rate=config.dagger.learning_rate, gradient_clip_val=config.trainer.gradient_clip_val)
    resuming = resume_path(run_dir)
    if resuming:
        return load_training_checkpoint(resuming, **settings).train()
    source = config.dagger.init_from
    if not source:
        return BlocksDagger(vocabulary, **config.model, **settings)
    start = load_training_checkpoint(source) if str(source).endswith(".ckpt") else BlocksPolicy.from_pretrained(source)
    start = match_previous_action_input(start, config.model.use_previous_action, config.seed)
    return start.to_objective(BlocksDagger, **settings).train()


def match_previous_action_input(policy: BlocksPolicy, wanted: bool, seed: int) -> BlocksPolicy:
    """The start with the previous-action input the config asks for: a start trained without
    it (no exposure bias, spec §6.4 supervised) gets it added for the bandit; one trained with
    it cannot lose it, so that is an error rather than a silent switch."""
    if policy.hparams.use_previous_action == wanted:
        return policy
    if not wanted:
        raise SystemExit("bandit.init_from reads the previous action but model.use_previous_action=false; "
                         "start from a policy trained without the input")
    torch.manual_seed(seed)
    log.info("adding the previous-action input to the start (new embeddings, the rest kept)")
    return policy.with_previous_action_input()


def main(argv: list[str], extra_callbacks: list = (),
         default_config: str | Path | Sequence[str | Path] = DEFAULT_CONFIG) -> int:
    """Run the recipe; ``extra_callbacks`` lets tests and notebooks observe or interrupt it."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    config = load_config(default_config, argv)
    if config.method not in ("supervised", "planner", "dagger", *RL_METHODS):
        raise SystemExit(f"method must be supervised, planner, dagger, bandit, reinforce or dqn; got {config.method!r}")
    run_directory = start_run(config)
    try:
        with one_line_write_errors(run_directory.path):
            return _main(config, run_directory, list(extra_callbacks))
    finally:
        run_directory.close()


def _main(config: DictConfig, run_directory: RunDirectory, extra_callbacks: list) -> int:
    run_dir, record = run_directory.path, run_directory.record()
    if config.method == "supervised":
        datamodule = make_datamodule(config, mode="steps")
        fit(config, supervised_policy(config, datamodule), datamodule, run_dir, extra_callbacks=extra_callbacks,
            record=record)
        return 0
    if config.method == "planner":
        datamodule = make_datamodule(config, mode="targets")
        policy = BlocksPlanner(datamodule.vocabulary.words, **config.model, learning_rate=config.supervised.learning_rate)
        fit(config, policy, datamodule, run_dir, extra_callbacks=extra_callbacks, record=record)
        return 0
    if config.method == "dagger":
        datamodule = make_datamodule(config, mode="episodes")
        policy = initial_dagger_policy(config, run_dir, datamodule.vocabulary.words)
        datamodule.vocabulary = policy.vocabulary
        dagger = config.dagger
        loop = ExpertLoop(datamodule.train_examples, seed=config.seed, renderer=datamodule.renderer,
                          beta_start=dagger.beta_start, beta_decay=dagger.beta_decay, beta_end=dagger.beta_end,
                          policy_actions=dagger.policy_actions, replay_size=dagger.replay_size,
                          batch_size=dagger.batch_size, updates_per_rollout=dagger.updates_per_rollout)
        fit(config, policy, datamodule, run_dir, extra_callbacks=[loop, *extra_callbacks], record=record)
        return 0
    datamodule = make_datamodule(config, mode="episodes")
    policy = initial_rl_policy(config, run_dir, datamodule.vocabulary.words)
    datamodule.vocabulary = policy.vocabulary
    reward = RewardConfig(config.bandit.reward, failure_penalty=config.bandit.failure_penalty)
    if config.method == "dqn":
        dqn = config.dqn
        loop = DQNLoop(datamodule.train_examples, reward, seed=config.seed, renderer=datamodule.renderer,
                       demo_cache=datamodule.demos, capacity=dqn.replay_size, batch_size=dqn.batch_size,
                       epsilon_start=dqn.epsilon_start, epsilon_end=dqn.epsilon_end, epsilon_steps=dqn.epsilon_steps)
    else:
        loop = ContextualBanditLoop(datamodule.train_examples, reward, seed=config.seed, renderer=datamodule.renderer,
                                    demo_cache=datamodule.demos)
    fit(config, policy, datamodule, run_dir, extra_callbacks=[loop, *extra_callbacks], record=record)
    return 0
