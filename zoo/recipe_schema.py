"""The recipes' configuration schema: every key's type, range and choices, in one place.

:func:`zoo.experiment.load_config` merges a recipe's YAML, ``--config`` files and dotted
overrides, then calls :func:`check_recipe_config` once, so a value that would crash a run
later, hang it, or train nonsense (a seed Lightning cannot take, ``data.batch_size=0``,
a 400 GB embedding table, 99 DDP processes on a 2-core machine) stops it before any work
with one line: ``config key 'data.batch_size' must be an integer >= 1, got 0``.

The sections mirror the YAML files (``zoo/recipes/``): :class:`LightRecipe` for ``light_*.yaml`` merged
over ``light_common.yaml`` (one options class per ``model.name``), :class:`BlocksRecipe` for
``blocks_*.yaml`` merged over ``blocks_common.yaml`` (one per objective: its ``model.options``, ``start`` and ``loop``). Pydantic does the checking
(strict types: ``true`` is not a size, ``2.5`` is not an epoch count; no inf or nan); this
module only states the rules and turns pydantic's report into one line.
"""

from __future__ import annotations

import os
from dataclasses import fields
from typing import Annotated, Any, Literal, Optional, Union, get_args, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, ValidationInfo, create_model, \
    field_validator, model_validator

from zoo.blocks.procedural import MAX_TRANSITIONS as PROCEDURAL_TRANSITIONS_MAX
from zoo.models.blocks.network_config import BlocksNetworkConfig

# ------------------------------------------------------------------------------------- sizes
# Upper bounds of the model sizes a constructor takes, each 5-20x the largest size the papers
# or the recipes use, so every published configuration and any plausible scaling of it fits,
# while a typo (an extra three zeros) stops at once instead of attempting an allocation. The
# worst case the bounds admit is an embedding table of VOCABULARY_MAX x WIDTH_MAX = 1.07e9
# parameters (4.3 GB in float32): large, but memory a GPU machine has, unlike the 1e11
# parameters (400 GB) of model.embedding_dim=100000000.
WIDTH_MAX = 4096
"""Embedding, hidden, LSTM and model widths (the papers: 24-768; BERT-large: 1024)."""
FFN_MAX = 16384
"""Transformer feed-forward widths (4 x WIDTH_MAX)."""
LAYERS_MAX = 48
HEADS_MAX = 64
CHANNELS_MAX = 1024
"""Convolution channels of the Blocks image encoder (the paper's: 32)."""
VOCABULARY_MAX = 262_144
"""Word and BPE vocabularies (LIGHT's: about 30,000 words)."""
TOKENS_MAX = 8192
"""Token budgets of contexts, memories, candidates and generations (the recipes': 24-256)."""
SEED_MAX = 2**32 - 1
"""``lightning.seed_everything`` (numpy's generator) takes seeds 0..2**32-1."""

# ----------------------------------------------------------------- rates, penalties, weights
# Finite is not enough: 1e300 is a finite float64 but overflows float32 (at most 3.4e38), where
# training computes, into inf weights and nan losses ("probability tensor contains inf/nan" at
# the next sample). Each bound is far above any value a recipe or paper uses, far below overflow.
LEARNING_RATE_MAX = 10
"""Learning rates lie in (0, 10]. Adam moves each weight by about the learning rate at every
step, whatever the gradient's size, so a rate far above 1 throws weights initialised near 0.1
out of any useful range at the first step. The recipes use 1e-4 to 1e-3; 10 leaves room for
experiments with plain SGD."""
WEIGHT_MAX = 1000
"""Rewards and penalties lie in [-1000, 1000]; loss weights, coefficients, margins and scales in
[0, 1000]. Each multiplies a term of a loss measured in rewards of about 1 (a failed episode's
-1) or cross-entropies of a few nats: past 1000 that term drowns every other one."""
WEIGHT_DECAY_MAX = 1
"""AdamW shrinks each weight by learning_rate x weight_decay at every step (the recipes: 0.01);
at 1 a learning rate of 1 already zeroes every weight at each step."""
LENGTH_PENALTY_MAX = 10
"""The beam search divides a hypothesis's log-likelihood by length**length_penalty (the recipe's
0.65; 1 is the mean per token): an exponent, for which 10 already makes length decide alone."""

Width = Annotated[int, Field(ge=1, le=WIDTH_MAX)]
FfnWidth = Annotated[int, Field(ge=1, le=FFN_MAX)]
Layers = Annotated[int, Field(ge=1, le=LAYERS_MAX)]
Heads = Annotated[int, Field(ge=1, le=HEADS_MAX)]
Channels = Annotated[int, Field(ge=1, le=CHANNELS_MAX)]
Vocabulary = Annotated[int, Field(ge=1, le=VOCABULARY_MAX)]
Tokens = Annotated[int, Field(ge=1, le=TOKENS_MAX)]
Count = Annotated[int, Field(ge=1)]
CountOrZero = Annotated[int, Field(ge=0)]
Seed = Annotated[int, Field(ge=0, le=SEED_MAX)]
Rate = Annotated[float, Field(gt=0)]
LearningRate = Annotated[float, Field(gt=0, le=LEARNING_RATE_MAX)]
Penalty = Annotated[float, Field(ge=-WEIGHT_MAX, le=WEIGHT_MAX)]
"""A reward or penalty: either sign (``failure_penalty``)."""
Weight = Annotated[float, Field(ge=0, le=WEIGHT_MAX)]
"""A loss weight, coefficient, margin or scale."""
WeightDecay = Annotated[float, Field(ge=0, le=WEIGHT_DECAY_MAX)]
LengthPenalty = Annotated[float, Field(ge=-LENGTH_PENALTY_MAX, le=LENGTH_PENALTY_MAX)]
NonNegative = Annotated[float, Field(ge=0)]
Fraction = Annotated[float, Field(ge=0, le=1)]


class Section(BaseModel):
    """A YAML section: exactly its keys, strictly typed, finite numbers."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False, protected_namespaces=())


class OpenSection(Section):
    """A section whose other keys another part checks (a constructor's options, Trainer arguments)."""

    model_config = ConfigDict(extra="allow")


class RecipeConfigError(SystemExit):
    """A configuration value outside its type, range or choices; the message is one line."""


# ------------------------------------------------------------------------------ shared parts
class Checkpoint(Section):
    every_n_train_steps: Count


class Logger(Section):
    kind: Optional[Literal["wandb", "csv", "none"]]
    project: str
    mode: Literal["offline", "online"] = "offline"


class Resume(Section):
    """How a rerun into an existing run_dir goes on: the keys it may change (which keys are
    safe to change is :data:`zoo.run_directory.SAFE_TO_CHANGE`'s to say, checked when the run
    directory is opened, before anything is written)."""

    allow_changed: list[str]


def _precisions() -> tuple:
    """Every precision ``lightning.Trainer`` accepts (its own ``_PRECISION_INPUT``)."""
    from lightning.fabric.connector import _PRECISION_INPUT

    return tuple(value for alias in get_args(_PRECISION_INPUT) for value in get_args(alias))


def _strategies() -> tuple:
    from lightning.pytorch.strategies import StrategyRegistry

    return ("auto", *StrategyRegistry.available_strategies())


def _accelerators() -> tuple:
    from lightning.pytorch.accelerators import AcceleratorRegistry

    return ("auto", "gpu", *sorted(AcceleratorRegistry.available_accelerators()))


def machine_devices(accelerator: str) -> tuple[str, int] | None:
    """(what a device is, how many this machine has) for ``accelerator``; None when zoo cannot
    count them (TPUs; or ranks placed by SLURM or torchrun, which may each see only their own
    GPU), which Lightning then checks itself."""
    import torch

    from zoo.machine import cluster_environment

    if cluster_environment() is not None:
        return None

    gpus = torch.cuda.device_count()
    if accelerator in ("gpu", "cuda") or accelerator == "auto" and gpus:
        return "GPU", gpus
    if accelerator == "mps" or accelerator == "auto" and torch.backends.mps.is_available():
        return "MPS device", int(torch.backends.mps.is_available())
    if accelerator in ("cpu", "auto"):
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        return "CPU", cpus
    return None


IntOrFraction = Union[CountOrZero, Fraction]
"""Lightning's batch limits and intervals: a count, or a fraction of the epoch."""


class Trainer(OpenSection):
    """The ``lightning.Trainer`` arguments zoo's recipes set or document. Other Trainer
    arguments pass to Lightning unchecked here (``validate_overrides`` checks their names)."""

    max_epochs: Optional[Annotated[int, Field(ge=-1)]] = None  # -1: no limit (Lightning's)
    min_epochs: Optional[CountOrZero] = None
    max_steps: Annotated[int, Field(ge=-1)] = -1
    min_steps: Optional[CountOrZero] = None
    accelerator: Literal[_accelerators()] = "auto"
    devices: Union[int, str, list[int]] = "auto"
    strategy: Literal[_strategies()] = "auto"
    num_nodes: Annotated[int, Field(ge=1, le=65536)] = 1
    precision: Optional[Literal[_precisions()]] = None
    gradient_clip_val: Optional[NonNegative] = None
    gradient_clip_algorithm: Optional[Literal["norm", "value"]] = None
    log_every_n_steps: Optional[CountOrZero] = None
    num_sanity_val_steps: Optional[Annotated[int, Field(ge=-1)]] = None  # -1: every batch
    val_check_interval: Optional[Union[Count, Annotated[float, Field(gt=0, le=1)]]] = None
    check_val_every_n_epoch: Optional[Count] = None
    limit_train_batches: Optional[IntOrFraction] = None
    limit_val_batches: Optional[IntOrFraction] = None
    limit_test_batches: Optional[IntOrFraction] = None
    overfit_batches: IntOrFraction = 0
    accumulate_grad_batches: Count = 1
    fast_dev_run: Union[bool, CountOrZero] = False
    deterministic: Optional[Union[bool, Literal["warn"]]] = None
    use_distributed_sampler: bool = True
    enable_progress_bar: Optional[bool] = None
    enable_model_summary: Optional[bool] = None
    enable_checkpointing: Optional[bool] = None
    benchmark: Optional[bool] = None
    inference_mode: bool = True
    detect_anomaly: bool = False
    sync_batchnorm: bool = False
    reload_dataloaders_every_n_epochs: CountOrZero = 0

    @field_validator("accelerator")
    @classmethod
    def _accelerator_on_this_machine(cls, accelerator):
        """An accelerator this machine lacks fails deep inside Lightning (``tpu`` without
        torch_xla: ModuleNotFoundError), after the run directory is made."""
        from zoo.machine import available_accelerators

        available = available_accelerators()
        if accelerator not in available:
            raise RecipeConfigError(f"config key 'trainer.accelerator' must be one this machine has "
                                    f"({', '.join(map(repr, available))}), got {accelerator!r}")
        return accelerator

    @field_validator("num_nodes")
    @classmethod
    def _nodes_launched(cls, num_nodes):
        """Several nodes need a launcher that starts this command on each of them; started by
        hand on one machine, DDP waits for the other nodes' processes, which never come."""
        from zoo.machine import multi_node_launch

        if num_nodes > 1 and multi_node_launch() is None:
            raise RecipeConfigError(
                f"config key 'trainer.num_nodes' must be 1 for a run started on one machine, got {num_nodes}: start "
                f"a multi-node run on every node at once (srun under SLURM, torchrun --nnodes {num_nodes}, or with "
                f"MASTER_ADDR, MASTER_PORT, NODE_RANK and WORLD_SIZE set on each node)")
        return num_nodes

    @field_validator("devices")
    @classmethod
    def _devices_on_this_machine(cls, devices, info: ValidationInfo):
        """Lightning starts one process per device: more than the machine has oversubscribes
        it (99 CPU processes on 2 cores) or fails deep inside the launcher."""
        found = machine_devices(info.data.get("accelerator", "auto"))
        if devices == "auto" or found is None:
            return devices
        kind, count = found
        if not count:
            raise RecipeConfigError(f"config key 'trainer.accelerator' asks for {kind}s, but this machine has none "
                                    f"(use 'cpu' or 'auto'), got {info.data.get('accelerator')!r}")
        choices = f"'auto', an integer between 1 and {count} (the {kind}s of this machine)"
        if kind == "GPU":
            choices += f", -1 (all), or a list of distinct GPU indices 0..{count - 1}"
        refusal = RecipeConfigError(f"config key 'trainer.devices' must be {choices}, got {devices!r}")
        if isinstance(devices, str):  # Lightning's "2", "0,1", "-1" name GPUs
            if kind == "GPU" and count and (devices.strip().lstrip("-").isdigit() or "," in devices):
                return devices
            raise refusal
        if isinstance(devices, list):
            if kind != "GPU" or not devices or len(set(devices)) != len(devices) \
                    or not all(0 <= index < count for index in devices):
                raise refusal
            return devices
        if not (1 <= devices <= count or devices == -1 and kind == "GPU" and count):
            raise refusal
        return devices

    @model_validator(mode="before")
    @classmethod
    def _zoo_sets_these(cls, values):
        for key in ("default_root_dir", "callbacks", "logger"):
            if isinstance(values, dict) and key in values:
                raise RecipeConfigError(f"config key 'trainer.{key}' is set by zoo itself (from run_dir, the "
                                        f"recipe's callbacks and the logger section); remove it")
        return values


# ------------------------------------------------------------------------------------- LIGHT
def _feature_sets() -> tuple:
    from zoo.light.features import FEATURE_SETS

    return tuple(FEATURE_SETS)


LightSplit = Literal["train", "valid", "test", "test_unseen"]


class LightData(Section):
    task: Literal["dialogue", "action", "emote"]
    features: Literal[_feature_sets()]
    source: Literal["sim", "official", "auto"]
    data_dir: Optional[str]
    sim_dir: Optional[str]
    sim_preset: Literal["full", "small", "tiny"]
    batch_size: Count
    eval_batch_size: Optional[Count]
    num_workers: Annotated[int, Field(ge=0, le=256)]
    limit: Optional[Union[Count, dict[LightSplit, Optional[Count]]]]


class EncoderOptions(OpenSection):
    """What the pretrained-encoder rankers share (the bi- and cross-ranker)."""

    backbone: Optional[str] = None
    backbone_config: Optional[dict] = None
    max_context_tokens: Tokens = 256
    max_candidate_tokens: Tokens = 32
    max_grounding_tokens: Tokens = 128
    learning_rate: LearningRate = 5e-5
    weight_decay: WeightDecay = 0.01
    encode_batch_size: Count = 128
    allow_download: bool = False


class BiRankerOptions(EncoderOptions):
    embedding_dim: Width = 768
    shared_encoder: bool = False
    in_batch_negatives: bool = True
    cache_candidates: bool = True
    own_negatives: bool = True
    pooling: Literal["cls", "mean"] = "cls"
    score_scale: Annotated[float, Field(gt=0, le=WEIGHT_MAX)] = 20.0


class CrossRankerOptions(EncoderOptions):
    train_candidates: CountOrZero = 8  # 0: all
    seed: Seed = 0

    @model_validator(mode="after")
    def _room_for_the_context(self):
        if self.max_candidate_tokens >= self.max_context_tokens:
            raise RecipeConfigError(f"config key 'model.options.max_candidate_tokens' must be less than "
                                    f"model.options.max_context_tokens ({self.max_context_tokens}: the pair shares "
                                    f"it), got {self.max_candidate_tokens}")
        return self


class GenerativeOptions(OpenSection):
    start: Literal["scratch", "minilm"] = "scratch"
    backbone: Optional[str] = None
    model_config_: Optional[dict] = Field(None, alias="model_config")
    vocabulary_size: Vocabulary = 8000
    d_model: Width = 256
    layers: Layers = 3
    heads: Heads = 4
    ffn_dim: FfnWidth = 1024
    max_context_tokens: Tokens = 256
    max_grounding_tokens: Tokens = 128
    max_target_tokens: Tokens = 32
    learning_rate: LearningRate = 5e-4
    weight_decay: WeightDecay = 0.01
    beam_size: Annotated[int, Field(ge=1, le=HEADS_MAX)] = 5
    min_length: Annotated[int, Field(ge=0, le=TOKENS_MAX)] = 1
    no_repeat_ngram_size: Annotated[int, Field(ge=0, le=TOKENS_MAX)] = 0
    length_penalty: LengthPenalty = 0.65
    max_new_tokens: Tokens = 32
    validation_generations: CountOrZero = 64
    allow_download: bool = False

    @field_validator("heads")
    @classmethod
    def _heads_divide_the_width(cls, heads, info: ValidationInfo):
        return _dividing(heads, info.data.get("d_model"), "d_model")


class MemNetOptions(OpenSection):
    dim: Width = 256
    layers: Layers = 2
    heads: Heads = 4
    ffn_dim: FfnWidth = 512
    dropout: Annotated[float, Field(ge=0, lt=1)] = 0.1
    hops: Layers = 1
    shared_candidate_encoder: bool = False
    context_lines: Count = 3
    history_memories: CountOrZero = 0
    max_context_tokens: Tokens = 64
    max_memory_tokens: Tokens = 48
    max_candidate_tokens: Tokens = 32
    max_memories: Annotated[int, Field(ge=1, le=1024)] = 16
    vocab_min_count: Count = 2
    vocab_size: Vocabulary = 30_000
    learning_rate: LearningRate = 1e-3
    weight_decay: WeightDecay = 0.01
    warmup_steps: CountOrZero = 200
    in_batch_negatives: bool = True

    @field_validator("heads")
    @classmethod
    def _heads_divide_the_width(cls, heads, info: ValidationInfo):
        return _dividing(heads, info.data.get("dim"), "dim")


def _dividing(heads: int, width: int | None, width_name: str) -> int:
    """Multi-head attention splits the width evenly between the heads."""
    if width is not None and width % heads:
        raise RecipeConfigError(f"config key 'model.options.heads' must divide model.options.{width_name} ({width}), "
                                f"got {heads}")
    return heads


class StarSpaceOptions(OpenSection):
    dim: Width = 128
    pooling: Literal["mean", "sqrt"] = "mean"
    similarity: Literal["cosine", "dot"] = "cosine"
    margin: Weight = 0.5
    num_negatives: CountOrZero = 0  # 0: every candidate
    learning_rate: LearningRate = 1e-3
    weight_decay: WeightDecay = 0.0
    min_count: Count = 2
    max_vocab: Vocabulary = 50_000
    idf_weighting: bool = True
    sublinear_tf: bool = True
    max_actions: Count = 5000
    world: str = "auto"


LIGHT_MODELS: dict[str, type[OpenSection]] = {
    "light-bi-ranker": BiRankerOptions,
    "light-cross-ranker": CrossRankerOptions,
    "light-generative": GenerativeOptions,
    "light-memnet": MemNetOptions,
    "light-starspace": StarSpaceOptions,
}
"""``model.name`` -> the schema of its ``model.options`` (the model class's constructor arguments)."""


def _light_model(name: str, options: type[OpenSection]) -> type[Section]:
    return type(f"{options.__name__}Model", (Section,), {
        "__annotations__": {"name": Literal[name], "options": Optional[options]}, "options": None})


LightModel = Annotated[Union[tuple(_light_model(n, o) for n, o in LIGHT_MODELS.items())], Field(discriminator="name")]


class LightRecipe(Section):
    """``zoo/recipes/light_common.yaml`` with one model's YAML merged over it."""

    seed: Seed
    threads: Optional[Annotated[int, Field(ge=1, le=4096)]]
    test: bool
    export: bool
    run_dir: str
    data: LightData
    model: LightModel
    trainer: Trainer
    checkpoint: Checkpoint
    logger: Logger
    resume: Resume


# ------------------------------------------------------------------------------------ Blocks
class BlocksData(Section):
    data_dir: Optional[str]
    source: Literal["auto", "real", "procedural"]
    download: bool
    batch_size: Count
    supervised_schedule: Literal["replay", "epoch"]
    replay_capacity: Count
    num_workers: Annotated[int, Field(ge=0, le=256)]
    procedural_sizes: Optional[dict[Literal["train", "dev", "test"],
                                    Annotated[int, Field(ge=1, le=PROCEDURAL_TRANSITIONS_MAX)]]]
    limit: Optional[Union[Count, dict[Literal["train", "tuning", "dev"], Optional[Count]]]] = None
    episodes_per_batch: Annotated[int, Field(ge=1, le=4096)]


FIXED_NETWORK_SETTINGS = ("vocabulary", "history", "image_size")
"""Network settings no recipe sets: the data's words, and the history and image size its stacks have."""


def _network_settings() -> type[OpenSection]:
    """The recipe options of the network's other settings, each with the type and default
    :class:`~zoo.models.blocks.network_config.BlocksNetworkConfig` gives it; sizes are bounded
    as widths, the convolutions' channels as channels."""
    types = get_type_hints(BlocksNetworkConfig)
    rules = {}
    for setting in fields(BlocksNetworkConfig):
        if setting.name not in FIXED_NETWORK_SETTINGS:
            rule = Channels if setting.name == "conv_channels" else Width if types[setting.name] is int \
                else types[setting.name]
            rules[setting.name] = (rule, setting.default)
    return create_model("BlocksNetworkSettings", __base__=OpenSection, **rules)


class BlocksNetworkOptions(_network_settings()):
    """What every objective of ``zoo.models.blocks`` takes: the network's settings (the paper's
    Appendix C sizes by default) and the learning rate."""

    learning_rate: LearningRate = 1e-3


Reward = Literal["problem", "f1", "f2", "shaped", "distance"]


class BanditOptions(BlocksNetworkOptions):
    """``BlocksBandit`` and ``BlocksReinforce``: the objective's settings beside the sizes."""

    entropy_coefficient: Weight = 0.1
    reward: Reward = "shaped"
    failure_penalty: Penalty = -1.0
    episodes_per_update: Annotated[int, Field(ge=1, le=4096)] = 1
    update_weighting: Literal["steps", "episodes"] = "steps"
    reward_baseline: Literal["none", "mean"] = "none"
    loss_form: Literal["original", "joint"] = "original"
    gradient_clip_val: Optional[NonNegative] = 5.0
    gradient_clip_algorithm: Literal["per_parameter", "global"] = "per_parameter"


class DQNOptions(BlocksNetworkOptions):
    discount: Fraction = 0.9
    reward: Reward = "shaped"
    failure_penalty: Penalty = -1.0


class DaggerOptions(BlocksNetworkOptions):
    gradient_clip_val: Optional[NonNegative] = 5.0
    gradient_clip_algorithm: Literal["per_parameter", "global"] = "per_parameter"
    beta_start: Fraction = 1.0
    beta_decay: Annotated[float, Field(gt=0, le=1)] = 0.99
    beta_end: Fraction = 0.0
    stop_weight: Annotated[float, Field(gt=0, le=WEIGHT_MAX)] = 1.0

    @model_validator(mode="after")
    def _beta_falls(self):
        if self.beta_end > self.beta_start:
            raise RecipeConfigError(f"config key 'model.options.beta_end' must be at most model.options.beta_start "
                                    f"({self.beta_start}), got {self.beta_end}")
        return self


class SpoOptions(BanditOptions):
    """``BlocksSpo``: the bandit's reward settings, PPO's clip and passes, the moving baseline."""

    learning_rate: LearningRate = 1e-4
    entropy_coefficient: Weight = 0.01
    loss_form: Literal["original", "joint"] = "joint"
    reward_baseline: Literal["none", "mean"] = "mean"
    clip: Annotated[float, Field(gt=0, lt=1)] = 0.05
    ppo_epochs: Annotated[int, Field(ge=1, le=100)] = 4
    baseline_window: Annotated[int, Field(ge=1, le=100_000)] = 100
    stop_weight: Annotated[float, Field(gt=0, le=WEIGHT_MAX)] = 1.0


class WarmStart(Section):
    """Where a bandit's weights begin: a policy, or a supervised warm-up trained in the run."""

    init_from: Optional[str]
    warmup_epochs: CountOrZero
    warmup_learning_rate: LearningRate
    reset_direction_head: bool


class PolicyStart(Section):
    """Where DAgger's or SPO's weights begin: a policy, or fresh ones."""

    init_from: Optional[str]


class ReplayLoop(Section):
    """The DQN loop's replay and exploration schedule; the replay and a minibatch drawn from it
    must fit in this machine's memory (:func:`fits_in_memory`)."""

    replay_size: Count
    batch_size: Count
    epsilon_start: Fraction
    epsilon_end: Fraction
    epsilon_steps: Count

    @model_validator(mode="after")
    def _fits_in_memory(self):
        from zoo.callbacks.dqn_loop import ReplayMemory

        fits_in_memory("loop.replay_size", self.replay_size, ReplayMemory.bytes_per_transition(), "transition")
        fits_in_memory("loop.batch_size", self.batch_size, ReplayMemory.bytes_per_sampled_transition(),
                       "sampled transition", stored=self.replay_size)  # a draw takes at most the whole replay
        return self


class ExpertLoopSettings(Section):
    """The DAgger loop's rollouts and replay; the replay and a minibatch drawn from it must fit in
    this machine's memory (:func:`fits_in_memory`)."""

    policy_actions: Literal["greedy", "sample"]
    replay_size: Count
    batch_size: Count
    updates_per_rollout: Optional[Count]

    @model_validator(mode="after")
    def _fits_in_memory(self):
        from zoo.callbacks.expert_loop import ExpertReplay

        fits_in_memory("loop.replay_size", self.replay_size, ExpertReplay.bytes_per_decision(), "decision")
        fits_in_memory("loop.batch_size", self.batch_size, ExpertReplay.bytes_per_sampled_decision(),
                       "sampled decision")
        return self


def fits_in_memory(key: str, count: int, item_bytes: int, item: str, stored: int | None = None) -> None:
    """Refuse ``count`` items of ``item_bytes`` each (at most ``stored`` of them held at once)
    when they exceed the memory this machine has available now: allocated anyway, they end
    in a RuntimeError at the first rollout, or in a machine that swaps until it is killed."""
    from zoo.machine import available_memory, format_bytes

    free = available_memory()
    held = min(count, stored) if stored is not None else count
    if free is None or held * item_bytes <= free:
        return
    raise RecipeConfigError(f"config key {key!r} must be at most {free // item_bytes:,} on this machine (about "
                            f"{format_bytes(item_bytes)} per {item}, {format_bytes(free)} of memory available), got "
                            f"{count} (about {format_bytes(held * item_bytes)})")


class Evaluation(Section):
    dev_every_n_epochs: Count
    dev_limit: Optional[Count]
    gifs: Annotated[int, Field(ge=0, le=1000)]


class BlocksRecipe(Section):
    """``zoo/recipes/blocks_common.yaml`` with one objective's YAML merged over it; the subclasses
    below say which ``model.options``, ``start`` and ``loop`` each objective takes."""

    seed: Seed
    threads: Optional[Annotated[int, Field(ge=1, le=4096)]]
    run_dir: str
    data: BlocksData
    evaluation: Evaluation
    checkpoint: Checkpoint
    logger: Logger
    resume: Resume
    trainer: Trainer


def _blocks_recipe(name: str, options: type[OpenSection], start: type[Section] | None = None,
                   loop: type[Section] | None = None) -> type[BlocksRecipe]:
    model = type(f"{options.__name__}Model{name.title().replace('-', '')}", (Section,), {
        "__annotations__": {"name": Literal[name], "options": Optional[options]}, "options": None})
    fields: dict[str, Any] = {"model": model}
    fields.update({"start": start} if start else {})
    fields.update({"loop": loop} if loop else {})
    return type(f"BlocksRecipe{name.title().replace('-', '')}", (BlocksRecipe,), {"__annotations__": fields})


BLOCKS_RECIPES: dict[str, type[BlocksRecipe]] = {
    "blocks-supervised": _blocks_recipe("blocks-supervised", BlocksNetworkOptions),
    "blocks-planner": _blocks_recipe("blocks-planner", BlocksNetworkOptions),
    "blocks-bandit": _blocks_recipe("blocks-bandit", BanditOptions, WarmStart),
    "blocks-reinforce": _blocks_recipe("blocks-reinforce", BanditOptions, WarmStart),
    "blocks-dqn": _blocks_recipe("blocks-dqn", DQNOptions, loop=ReplayLoop),
    "blocks-dagger": _blocks_recipe("blocks-dagger", DaggerOptions, PolicyStart, ExpertLoopSettings),
    "blocks-spo": _blocks_recipe("blocks-spo", SpoOptions, PolicyStart),
}
"""``model.name`` -> the schema of that objective's recipe."""


class AnyBlocksModel(Section):
    name: str
    options: Optional[BlocksNetworkOptions] = None


class OtherBlocksRecipe(BlocksRecipe):
    """An objective registered beyond the recipes above: its options are checked against its
    constructor, its ``start`` and ``loop`` by its keys' own checks."""

    model: AnyBlocksModel
    start: Optional[dict[str, Any]] = None
    loop: Optional[dict[str, Any]] = None


# ----------------------------------------------------------------------------------- checking
def recipe_schema(config: dict) -> type[Section]:
    """Both domains name their model (``model.name``); a Blocks one is ``blocks-*``."""
    model = config.get("model")
    name = model.get("name") if isinstance(model, dict) else None
    if isinstance(name, str) and name.startswith("blocks-"):
        return BLOCKS_RECIPES.get(name, OtherBlocksRecipe)
    return LightRecipe


def check_recipe_config(config) -> None:
    """Raise :class:`RecipeConfigError` (one line, the first bad key) unless every value of the
    merged ``config`` (a DictConfig or a plain dict) has its type, range and choices."""
    from omegaconf import DictConfig, OmegaConf

    data = OmegaConf.to_container(config, resolve=True) if isinstance(config, DictConfig) else config
    schema = recipe_schema(data)
    try:
        schema.model_validate(data)
    except ValidationError as error:
        raise RecipeConfigError(explain(error.errors()[0], schema, data)) from None


def explain(error: dict, schema: type[BaseModel], data: dict) -> str:
    """One line for one pydantic error: the dotted key, what it must be, what it was."""
    fields, value, leaf = _walk(error["loc"], schema, data)
    key = ".".join(map(str, fields))
    got = f", got {value!r}"
    kind = error["type"]
    if kind == "extra_forbidden":
        return f"unknown config key {key!r} (python RECIPE --help lists them)"
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        return f"config key '{key}.name' must be one of {error['ctx']['expected_tags']}, got {value.get('name')!r}"
    if kind == "missing":
        return f"config key {key!r} is missing"
    if leaf is None:
        return f"config key {key!r}: {error['msg']}{got}"
    return f"config key {key!r} must be {describe(leaf)}{got}"


def _walk(loc: tuple, schema: type[BaseModel], data: Any):
    """(the config keys along ``loc``, the value there, the leaf field's FieldInfo or None).

    ``loc`` holds pydantic's union tags between the keys (a discriminated union's member, or
    ``int``/``dict[...]`` inside a leaf); the walk stops at the first field that is not a section."""
    fields, model, value, leaf = [], schema, data, None
    parts = list(loc)
    while parts and model is not None:
        part = parts.pop(0)
        if part not in model.model_fields:
            if isinstance(value, dict) and part in value:  # an extra key
                fields.append(part)
                value = value[part]
            break
        info = model.model_fields[part]
        name = info.alias or part
        fields.append(name)
        value = value.get(name) if isinstance(value, dict) else None
        member = _section_of(info.annotation, value)
        if member is None:
            leaf = info
            break
        model = member
        if parts and parts[0] not in member.model_fields and _is_union(info.annotation):
            parts.pop(0)  # the discriminated union's tag
    return fields, value, leaf


def _is_union(annotation) -> bool:
    return len([arg for arg in get_args(annotation) if isinstance(arg, type) and issubclass(arg, BaseModel)]) > 1 \
        or any(_is_union(arg) for arg in get_args(annotation))


def _section_of(annotation, value) -> type[BaseModel] | None:
    """The section class an annotation names (the discriminated member ``value`` picks), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    members = []
    for arg in get_args(annotation):
        found = _section_of(arg, value)
        if found is not None:
            members.append(found)
    if len(members) > 1 and isinstance(value, dict):
        for member in members:
            tag = member.model_fields.get("name")
            if tag is not None and value.get("name") in get_args(tag.annotation):
                return member
    return members[0] if members else None


def describe(field) -> str:
    """What a field accepts, in words: ``an integer >= 1``, ``one of 'cls', 'mean'`` ..."""
    annotation = Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation
    return _words(TypeAdapter(annotation).json_schema())


def _words(schema: dict) -> str:
    if "anyOf" in schema:
        parts = [_words(option) for option in schema["anyOf"]]
        return ", ".join(parts[:-1]) + " or " + parts[-1] if len(parts) > 1 else parts[0]
    if schema.get("type") == "array":
        inner = _words(schema.get("items", {}))
        return "a list of " + {"an integer": "integers", "a string": "strings"}.get(inner, f"({inner})")
    if "enum" in schema or "const" in schema:
        choices = schema.get("enum", [schema.get("const")])
        return f"{choices[0]!r}" if len(choices) == 1 else "one of " + ", ".join(repr(c) for c in choices)
    kind = schema.get("type")
    if kind == "null":
        return "null"
    if kind == "boolean":
        return "true or false"
    if kind == "string":
        return "a string"
    if kind == "object":
        keys = schema.get("propertyNames", {}).get("enum")
        inner = _words(schema.get("additionalProperties", {})) if schema.get("additionalProperties") else "values"
        inner = f"({inner})" if " or " in inner else inner
        return f"a mapping of {', '.join(keys)} to {inner}" if keys else f"a mapping to {inner}"
    if kind in ("integer", "number"):
        noun = "an integer" if kind == "integer" else "a number"
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        high = schema.get("maximum", schema.get("exclusiveMaximum"))
        if "minimum" in schema and "maximum" in schema:
            return f"{noun} between {low} and {high}"
        bounds = [f"{'>' if 'exclusiveMinimum' in schema else '>='} {low}"] if low is not None else []
        bounds += [f"{'<' if 'exclusiveMaximum' in schema else '<='} {high}"] if high is not None else []
        return f"{noun} {' and '.join(bounds)}" if bounds else {"an integer": noun, "a number": "a finite number"}[noun]
    return "a valid value"
