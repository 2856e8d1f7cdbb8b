"""The recipe sections that are zoo's own settings, not another API's arguments: the data, where a
Blocks objective's weights start, the loop around it, evaluation, checkpoints, logging, resuming.
:mod:`zoo.recipe_schema` joins them with the model's options and the Trainer's arguments."""

from __future__ import annotations

from typing import Annotated, Literal, Optional, Union

from pydantic import Field, model_validator

from zoo.blocks.procedural import MAX_TRANSITIONS as PROCEDURAL_TRANSITIONS_MAX
from zoo.recipe_constraints import Count, CountOrZero, Fraction, LearningRate, RecipeConfigError, Section


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


def _feature_sets() -> tuple:
    from zoo.light.features import FEATURE_SETS

    return tuple(FEATURE_SETS)


LightSplit = Literal["train", "valid", "test", "test_unseen"]
Workers = Annotated[int, Field(ge=0, le=256)]


class LightData(Section):
    task: Literal["dialogue", "action", "emote"]
    features: Literal[_feature_sets()]
    source: Literal["sim", "official", "auto"]
    data_dir: Optional[str]
    sim_dir: Optional[str]
    sim_preset: Literal["full", "small", "tiny"]
    batch_size: Count
    eval_batch_size: Optional[Count]
    num_workers: Workers
    limit: Optional[Union[Count, dict[LightSplit, Optional[Count]]]]


class BlocksData(Section):
    data_dir: Optional[str]
    source: Literal["auto", "real", "procedural"]
    download: bool
    batch_size: Count
    supervised_schedule: Literal["replay", "epoch"]
    replay_capacity: Count
    num_workers: Workers
    procedural_sizes: Optional[dict[Literal["train", "dev", "test"],
                                    Annotated[int, Field(ge=1, le=PROCEDURAL_TRANSITIONS_MAX)]]]
    limit: Optional[Union[Count, dict[Literal["train", "tuning", "dev"], Optional[Count]]]] = None
    episodes_per_batch: Annotated[int, Field(ge=1, le=4096)]


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
