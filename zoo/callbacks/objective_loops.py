"""The experience-collecting callback each Blocks objective trains with, by the name the
objective declares (``BlocksPolicy.training_loop``).

The runner asks :func:`loop_callbacks` for a policy's loop instead of switching on the
objective's name, so a new objective that collects experience as an existing one does (a
subclass of ``BlocksBandit``, say) needs no line anywhere; one with a new kind of loop adds a
``@register_loop("name")`` factory here. A factory reads the objective's own settings from
the policy (its reward, its β schedule: constructor arguments, saved with it) and the
settings of the loop itself from the recipe's ``loop`` section.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import lightning as L

from zoo.callbacks.contextual_bandit import ContextualBanditLoop
from zoo.callbacks.dqn_loop import DQNLoop
from zoo.callbacks.expert_loop import ExpertLoop
from zoo.callbacks.scheduled_loop import ScheduledLoop

LoopFactory = Callable[[Any, Any, Mapping[str, Any], int], L.Callback]
"""(policy, data module, the recipe's ``loop`` settings, seed) -> the callback."""

_LOOPS: dict[str, LoopFactory] = {}


def register_loop(name: str) -> Callable[[LoopFactory], LoopFactory]:
    """Decorator: the factory of the loop an objective names with ``training_loop = name``."""

    def decorate(factory: LoopFactory) -> LoopFactory:
        if name in _LOOPS and _LOOPS[name] is not factory:
            raise ValueError(f"training loop {name!r} is already registered")
        _LOOPS[name] = factory
        return factory

    return decorate


def loop_callbacks(policy, datamodule, loop: Mapping[str, Any], seed: int) -> list[L.Callback]:
    """The callbacks ``policy``'s objective collects its experience with (none for one that
    learns from a fixed data set)."""
    name = type(policy).training_loop
    if name is None:
        return []
    if name not in _LOOPS:
        raise ValueError(f"{type(policy).__name__} trains with the loop {name!r}, which is not registered; "
                         f"known: {', '.join(sorted(_LOOPS))}")
    return [_LOOPS[name](policy, datamodule, dict(loop), seed)]


@register_loop("contextual_bandit")
def contextual_bandit(policy, datamodule, loop: dict, seed: int) -> ContextualBanditLoop:
    return ContextualBanditLoop(datamodule.train_examples, policy.reward_config(), seed=seed, renderer=datamodule.renderer,
                                demo_cache=datamodule.demos, **loop)


@register_loop("dqn")
def dqn(policy, datamodule, loop: dict, seed: int) -> DQNLoop:
    return DQNLoop(datamodule.train_examples, policy.reward_config(), seed=seed, renderer=datamodule.renderer,
                   demo_cache=datamodule.demos, capacity=loop.pop("replay_size"), **loop)


@register_loop("expert")
def expert(policy, datamodule, loop: dict, seed: int) -> ExpertLoop:
    return ExpertLoop(datamodule.train_examples, seed=seed, renderer=datamodule.renderer, **policy.beta_schedule(),
                      **loop)


@register_loop("scheduled")
def scheduled(policy, datamodule, loop: dict, seed: int) -> ScheduledLoop:
    return ScheduledLoop(datamodule.train_examples, policy.reward_config(), seed=seed, renderer=datamodule.renderer,
                         demo_cache=datamodule.demos, window=policy.baseline_window(), **loop)
