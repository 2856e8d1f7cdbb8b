"""The recipes' configuration schema: every key's type, range and choices, in one place.

:func:`zoo.experiment.load_config` calls :func:`check_recipe_config` on the merged recipe, so a value
that would crash a run later, hang it, or train nonsense (``data.batch_size=0``, a 400 GB embedding
table, 99 DDP processes on 2 cores) stops it before any work with one line:
``config key 'data.batch_size' must be an integer >= 1, got 0``.

The sections mirror the YAML files (``zoo/recipes/``): :class:`LightRecipe` for ``light_*.yaml`` over
``light_common.yaml`` (one options section per ``model.name``), :class:`BlocksRecipe` for ``blocks_*.yaml``
over ``blocks_common.yaml`` (one per objective: its ``model.options``, ``start`` and ``loop``). No default
is restated here: a model option's name, type and default are its constructor's (the Blocks network's,
:class:`BlocksNetworkConfig`'s), a Trainer argument's ``lightning.Trainer``'s; :mod:`zoo.recipe_constraints`
adds ranges, choices and cross-field checks, :mod:`zoo.recipe_sections` holds zoo's own sections.
Pydantic checks (strict types: ``true`` is not a size; no inf or nan); :mod:`zoo.recipe_messages`
turns its report into one line.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional, Union

import lightning as L
from omegaconf import DictConfig, OmegaConf
from pydantic import Field, ValidationError, ValidationInfo, create_model, field_validator, model_validator

from zoo.factory import model_spec
from zoo.machine import machine_devices
from zoo.models.blocks.goal import BlocksGoalPredictor
from zoo.models.blocks.network_config import BlocksNetworkConfig
from zoo.models.blocks.policy import BlocksPolicy, objective_class
from zoo.recipe_constraints import (OPTION_RULES, TRAINER_RULES, OpenSection, RecipeConfigError, Section, Seed,
                                    dataclass_fields, options_section, signature_fields)
from zoo.recipe_messages import _walk, describe, explain  # noqa: F401  (the schema's tests walk and describe too)
from zoo.recipe_sections import (BlocksData, Checkpoint, Evaluation, ExpertLoopSettings, LightData,  # noqa: F401
                                 Logger, PolicyStart, ReplayLoop, Resume, WarmStart, fits_in_memory)

Threads = Optional[Annotated[int, Field(ge=1, le=4096)]]


# ----------------------------------------------------------------------------------- trainer
class TrainerChecks(Section):
    """What zoo checks of the Trainer's arguments against this machine before Lightning starts."""

    @field_validator("accelerator", check_fields=False)
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

    @field_validator("num_nodes", check_fields=False)
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

    @field_validator("devices", check_fields=False)
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


Trainer = create_model("Trainer", __base__=TrainerChecks, __doc__="``lightning.Trainer``'s arguments: its names, "
                       "types and defaults, and :data:`TRAINER_RULES`' ranges and choices.",
                       **signature_fields(L.Trainer.__init__, "Trainer", TRAINER_RULES))


# ------------------------------------------------------------------------------------- LIGHT
LIGHT_MODELS: dict[str, type[OpenSection]] = {
    name: options_section(model_spec(name).cls)
    for name in ("light-bi-ranker", "light-cross-ranker", "light-generative", "light-memnet", "light-starspace")}
"""``model.name`` -> the schema of its ``model.options`` (the model class's constructor arguments)."""
BiRankerOptions, CrossRankerOptions, GenerativeOptions, MemNetOptions, StarSpaceOptions = LIGHT_MODELS.values()


def _model_section(name: str, options: type[OpenSection]) -> type[Section]:
    return type(f"{options.__name__}Model{name.title().replace('-', '')}", (Section,), {
        "__annotations__": {"name": Literal[name], "options": Optional[options]}, "options": None})


LightModel = Annotated[Union[tuple(_model_section(n, o) for n, o in LIGHT_MODELS.items())], Field(discriminator="name")]


class LightRecipe(Section):
    """``zoo/recipes/light_common.yaml`` with one model's YAML merged over it."""

    seed: Seed
    threads: Threads
    test: bool
    export: bool
    run_dir: str
    data: LightData
    model: LightModel
    trainer: Trainer
    checkpoint: Checkpoint
    logger: Logger
    resume: Resume


class AnyLightModel(Section):
    name: str
    options: Optional[dict[str, Any]] = None


class OtherLightRecipe(LightRecipe):
    """A LIGHT model registered beyond :data:`LIGHT_MODELS` (a model file of one's own): its
    options are checked against its constructor (:func:`zoo.training.runner.model_options`)."""

    model: AnyLightModel


# ------------------------------------------------------------------------------------ Blocks
FIXED_NETWORK_SETTINGS = ("vocabulary", "image_size")
"""Network settings no recipe sets: the data's words and the image size its frames have (``history``
is a recipe's: the data module stacks as many previous frames as the network reads)."""
NETWORK_SETTINGS = dataclass_fields(BlocksNetworkConfig, FIXED_NETWORK_SETTINGS, OPTION_RULES)
"""The network's other settings, each with its type and default from :class:`BlocksNetworkConfig`."""


def blocks_options(policy: type[BlocksPolicy]) -> type[OpenSection]:
    """An objective's ``model.options``: the network's settings, those of the objectives it extends
    (it passes on those it does not change) and its constructor's own."""
    settings = dict(NETWORK_SETTINGS)
    for base in reversed(policy.__mro__[1:]):
        if issubclass(base, BlocksPolicy):
            settings.update(signature_fields(base.__init__, base.__name__, OPTION_RULES))
    return options_section(policy, settings)


BlocksNetworkOptions = blocks_options(BlocksPolicy)
"""What every objective takes: the network's settings and the learning rate."""
OBJECTIVE_SECTIONS: dict[str, tuple[type[Section] | None, type[Section] | None]] = {
    "supervised": (None, None), "planner": (None, None), "bandit": (WarmStart, None), "reinforce": (WarmStart, None),
    "dqn": (None, ReplayLoop), "dagger": (PolicyStart, ExpertLoopSettings), "spo": (PolicyStart, None),
    "goal": (None, None)}
"""Each objective's ``start`` and ``loop`` sections (None: it takes none)."""
OPTIONS: dict[str, type[OpenSection]] = {
    **LIGHT_MODELS, **{f"blocks-{name}": blocks_options(objective_class(name)) for name in OBJECTIVE_SECTIONS},
    "blocks-goal-reader": options_section(BlocksGoalPredictor, dict(NETWORK_SETTINGS))}
"""Every ``model.name`` the recipes train -> the schema of its ``model.options``."""
BanditOptions, DQNOptions, DaggerOptions, SpoOptions = (OPTIONS[f"blocks-{n}"] for n in ("bandit", "dqn", "dagger", "spo"))


class BlocksRecipe(Section):
    """``zoo/recipes/blocks_common.yaml`` with one objective's YAML merged over it; the subclasses
    below say which ``model.options``, ``start`` and ``loop`` each objective takes."""

    seed: Seed
    threads: Threads
    run_dir: str
    data: BlocksData
    evaluation: Evaluation
    checkpoint: Checkpoint
    logger: Logger
    resume: Resume
    trainer: Trainer


def _blocks_recipe(objective: str) -> type[BlocksRecipe]:
    name, (start, loop) = f"blocks-{objective}", OBJECTIVE_SECTIONS[objective]
    sections: dict[str, Any] = {"model": _model_section(name, OPTIONS[name])}
    sections.update({"start": start} if start else {})
    sections.update({"loop": loop} if loop else {})
    return type(f"BlocksRecipe{objective.title()}", (BlocksRecipe,), {"__annotations__": sections})


BLOCKS_RECIPES: dict[str, type[BlocksRecipe]] = {
    **{f"blocks-{name}": _blocks_recipe(name) for name in OBJECTIVE_SECTIONS},
    "blocks-goal-reader": type("BlocksRecipeGoalReader", (BlocksRecipe,), {"__annotations__": {
        "model": _model_section("blocks-goal-reader", OPTIONS["blocks-goal-reader"])}})}
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
    """Both domains name their model (``model.name``); a Blocks one is ``blocks-*``; a registered LIGHT
    model the recipes do not name has its options checked by its constructor alone."""
    model = config.get("model")
    name = model.get("name") if isinstance(model, dict) else None
    if isinstance(name, str) and name.startswith("blocks-"):
        return BLOCKS_RECIPES.get(name, OtherBlocksRecipe)
    return OtherLightRecipe if isinstance(name, str) and name not in LIGHT_MODELS and _registered(name) else LightRecipe


def _registered(name: str) -> bool:
    try:
        return model_spec(name) is not None
    except KeyError:
        return False


def check_recipe_config(config) -> None:
    """Raise :class:`RecipeConfigError` (one line, the first bad key) unless every value of the
    merged ``config`` (a DictConfig or a plain dict) has its type, range and choices."""
    data = OmegaConf.to_container(config, resolve=True) if isinstance(config, DictConfig) else config
    schema = recipe_schema(data)
    try:
        schema.model_validate(data)
    except ValidationError as error:
        raise RecipeConfigError(explain(error.errors()[0], schema, data)) from None


def option_defaults(name: str) -> dict[str, Any]:
    """Every ``model.options`` key of the recipes' model ``name`` with the default it gets when a
    recipe leaves it out (its constructor's); KeyError for a model no recipe names."""
    return {field.alias or key: field.default for key, field in OPTIONS[name].model_fields.items()}


def _model_option(key: str, _root_) -> Any:
    """``${model_option:KEY}``: ``model.options.KEY``, or its constructor's default (a run_dir may name it)."""
    options = _root_.model.get("options") or {}
    return options[key] if key in options else option_defaults(str(_root_.model.name))[key]


(getattr(OmegaConf, "register_resolver", None) or OmegaConf.register_new_resolver)(  # omegaconf 2.4's name, 2.3's
    "model_option", _model_option, replace=True)
