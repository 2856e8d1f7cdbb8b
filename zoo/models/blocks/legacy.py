"""Configurations written before the split by objective, mapped onto today's classes.

Until then one class, ``BlockPolicy``, held every objective, chosen by its ``objective`` and
``head`` options; the released ``config.json`` files (``checkpoints/blocks-*``) and training
``.ckpt`` files of that time name it so. Here it is a name the loading layer resolves
(``zoo.factory.model_class``): constructing it with such a configuration builds the class
of today that objective trains with, given the options that class takes. The weights' names
did not change. The baselines' and the ensemble's former class names resolve the same way.
"""

from __future__ import annotations

import inspect
from typing import Any

from zoo.models.blocks.baselines import BlocksDemonstrations, BlocksRandom, BlocksStop
from zoo.models.blocks.ensemble import BlocksEnsemble
from zoo.models.blocks.policy import BlocksPolicy, objective_class
from zoo.registry import register_class

HEADS = {"factored": None, "q": "dqn", "target": "planner"}
"""A former ``head`` and the objective it implies (``factored``: the ``objective`` option's)."""

RENAMED = {"StopPolicy": BlocksStop, "RandomPolicy": BlocksRandom, "DemonstrationPolicy": BlocksDemonstrations,
           "PolicyEnsemble": BlocksEnsemble}
FORMER_NAMES = frozenset({"BlockPolicy", *RENAMED})
"""Class names that saved configurations may hold and that load as a class of another name."""


def resolve(config: dict[str, Any]) -> tuple[type[BlocksPolicy], dict[str, Any]]:
    """The class a former ``BlockPolicy`` configuration trains with, and the options of it
    that class takes (settings of other objectives, which it never read, are dropped)."""
    config = dict(config)
    objective, head = config.pop("objective", "supervised"), config.pop("head", "factored")
    if head not in HEADS:
        raise ValueError(f"head must be one of {', '.join(HEADS)}; got {head!r}")
    target = objective_class(HEADS[head] or objective)
    if target.objective in ("dqn", "planner") and HEADS[head] != target.objective:
        raise ValueError(f"objective {objective!r} needs its own head, not {head!r}")
    accepted = inspect.signature(target.__init__).parameters
    return target, {key: value for key, value in config.items() if key in accepted}


@register_class
class BlockPolicy(BlocksPolicy):
    """The former single policy class, as a name: ``BlockPolicy(**config)`` builds the
    objective's class of today (see :func:`resolve`); no instance of this class is made."""

    def __new__(cls, vocabulary: list[str], **options):
        target, accepted = resolve(options)
        return target(vocabulary, **accepted)

    def __init__(self, vocabulary: list[str], embedding_dim: int = 150, lstm_dim: int = 250, image_dim: int = 200,
                 conv_channels: int = 32, block_embedding_dim: int = 32, direction_embedding_dim: int = 24,
                 hidden_dim: int = 120, history: int = 4, image_size: int = 120, use_previous_action: bool = True,
                 objective: str = "supervised", learning_rate: float = 1e-3, entropy_coefficient: float = 0.1,
                 head: str = "factored", discount: float = 0.9, init: str = "glorot", loss_form: str = "original",
                 episodes_per_update: int = 1, update_weighting: str = "steps", reward_baseline: str = "none",
                 gradient_clip_val: float | None = 5.0, gradient_clip_algorithm: str = "per_parameter"):
        """Never runs (``__new__`` returns another class's instance): the signature is what
        a former configuration may hold, which the loading layer checks it against."""


def _register_renamed() -> None:
    from zoo.registry import register_class_name

    for name, cls in RENAMED.items():
        register_class_name(name, cls)


_register_renamed()
