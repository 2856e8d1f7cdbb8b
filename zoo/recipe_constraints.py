"""What the recipe schema adds to the code's own definitions: ranges, choices and cross-field checks.

A model option's name, type and default are its constructor's (or, for the Blocks network,
:class:`~zoo.models.blocks.network_config.BlocksNetworkConfig`'s); a Trainer argument's are
``lightning.Trainer``'s. :func:`signature_fields` reads them, and the tables here only say what
a value must also be: :data:`OPTION_RULES` (by option name, shared by every family that has the
option), :data:`TRAINER_RULES` and :data:`CHECKS` (the rules that join two options). A rule holds
no default, so no default is written twice.
"""

from __future__ import annotations

import inspect
import types
from dataclasses import MISSING, fields
from typing import Annotated, Any, Callable, Literal, Optional, Union, get_args, get_origin, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from zoo.blocks.reward import REWARD_VARIANTS
from zoo.models import starspace
from zoo.models.backbone import POOLINGS
from zoo.models.blocks.bandit import CLIP_ALGORITHMS, REWARD_BASELINES, UPDATE_WEIGHTINGS
from zoo.models.blocks.losses import LOSS_FORMS
from zoo.models.generative import RANKINGS, START_POINTS

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
Layers = Annotated[int, Field(ge=1, le=LAYERS_MAX)]
Tokens = Annotated[int, Field(ge=1, le=TOKENS_MAX)]
Vocabulary = Annotated[int, Field(ge=1, le=VOCABULARY_MAX)]
Count = Annotated[int, Field(ge=1)]
CountOrZero = Annotated[int, Field(ge=0)]
Seed = Annotated[int, Field(ge=0, le=SEED_MAX)]
LearningRate = Annotated[float, Field(gt=0, le=LEARNING_RATE_MAX)]
Penalty = Annotated[float, Field(ge=-WEIGHT_MAX, le=WEIGHT_MAX)]
"""A reward or penalty: either sign (``failure_penalty``)."""
Weight = Annotated[float, Field(ge=0, le=WEIGHT_MAX)]
"""A loss weight, coefficient, margin or scale."""
PositiveWeight = Annotated[float, Field(gt=0, le=WEIGHT_MAX)]
NonNegative = Annotated[float, Field(ge=0)]
Fraction = Annotated[float, Field(ge=0, le=1)]
IntOrFraction = Union[CountOrZero, Fraction]
"""Lightning's batch limits and intervals: a count, or a fraction of the epoch."""


class Section(BaseModel):
    """A YAML section: exactly its keys, strictly typed, finite numbers."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False, protected_namespaces=())


class OpenSection(Section):
    """A section whose other keys another part checks (a constructor's options)."""

    model_config = ConfigDict(extra="allow")


class RecipeConfigError(SystemExit):
    """A configuration value outside its type, range or choices; the message is one line."""


# ------------------------------------------------------------------------------ the tables
OPTION_RULES: dict[str, Any] = {
    **dict.fromkeys(("embedding_dim", "dim", "d_model", "lstm_dim", "image_dim", "block_embedding_dim",
                     "direction_embedding_dim", "hidden_dim"), Width),
    **dict.fromkeys(("conv_channels", "channels", "actor_channels"), Annotated[int, Field(ge=1, le=CHANNELS_MAX)]),
    "levels": Annotated[int, Field(ge=2, le=6)],
    "history": Annotated[int, Field(ge=0, le=16)],  # previous frames stacked with the current one  # the goal reader's: 120 px halves to 4 px by the sixth
    "ffn_dim": Annotated[int, Field(ge=1, le=FFN_MAX)],
    "layers": Layers, "hops": Layers, "heads": Annotated[int, Field(ge=1, le=HEADS_MAX)],
    **dict.fromkeys(("vocabulary_size", "vocab_size", "max_vocab"), Vocabulary),
    **dict.fromkeys(("max_context_tokens", "max_candidate_tokens", "max_grounding_tokens", "max_target_tokens",
                     "max_memory_tokens", "max_new_tokens"), Tokens),
    "max_memories": Annotated[int, Field(ge=1, le=1024)],
    **dict.fromkeys(("encode_batch_size", "context_lines", "min_count", "vocab_min_count", "max_actions"), Count),
    **dict.fromkeys(("history_memories", "warmup_steps", "validation_generations"), CountOrZero),
    "num_negatives": CountOrZero,  # 0: every candidate
    "train_candidates": CountOrZero,  # 0: all
    "beam_size": Annotated[int, Field(ge=1, le=HEADS_MAX)],
    **dict.fromkeys(("min_length", "no_repeat_ngram_size"), Annotated[int, Field(ge=0, le=TOKENS_MAX)]),
    "seed": Seed,
    "learning_rate": LearningRate,
    "weight_decay": Annotated[float, Field(ge=0, le=WEIGHT_DECAY_MAX)],
    "dropout": Annotated[float, Field(ge=0, lt=1)],
    "length_penalty": Annotated[float, Field(ge=-LENGTH_PENALTY_MAX, le=LENGTH_PENALTY_MAX)],
    **dict.fromkeys(("margin", "entropy_coefficient", "block_weight", "location_weight"), Weight),
    **dict.fromkeys(("score_scale", "stop_weight"), PositiveWeight),
    "failure_penalty": Penalty,
    "gradient_clip_val": Optional[NonNegative],
    **dict.fromkeys(("discount", "beta_start", "beta_end"), Fraction),
    "beta_decay": Annotated[float, Field(gt=0, le=1)],
    "clip": Annotated[float, Field(gt=0, lt=1)],
    "ppo_epochs": Annotated[int, Field(ge=1, le=100)],
    "baseline_window": Annotated[int, Field(ge=1, le=100_000)],
    "episodes_per_update": Annotated[int, Field(ge=1, le=4096)],
    "reward": Literal[REWARD_VARIANTS],
    "loss_form": Literal[LOSS_FORMS],
    "update_weighting": Literal[UPDATE_WEIGHTINGS],
    "reward_baseline": Literal[REWARD_BASELINES],
    "gradient_clip_algorithm": Literal[CLIP_ALGORITHMS],
    "similarity": Literal[starspace.SIMILARITIES],
    "start": Literal[START_POINTS],
    "ranking": Literal[RANKINGS],
    "lora_rank": Annotated[int, Field(ge=1, le=256)],
    "lora_alpha": Annotated[float, Field(gt=0, le=1024)],
    "lora_dropout": Annotated[float, Field(ge=0, lt=1)],
    "BiRanker.pooling": Literal[POOLINGS],
    "StarSpaceRanker.pooling": Literal[starspace.POOLINGS],
}
"""The range or choices of every numeric or chosen model option, by name (``Class.name`` where two
families mean different things by one name). A constructor's numeric option without one is an
error at import: its bad values would reach the model unchecked."""


def _room_for_the_context(section):
    if section.max_candidate_tokens >= section.max_context_tokens:
        raise RecipeConfigError(f"config key 'model.options.max_candidate_tokens' must be less than "
                                f"model.options.max_context_tokens ({section.max_context_tokens}: the pair shares "
                                f"it), got {section.max_candidate_tokens}")
    return section


def _heads_divide(width_name: str) -> Callable:
    """Multi-head attention splits the width evenly between the heads."""

    def check(section):
        width = getattr(section, width_name)
        if width % section.heads:
            raise RecipeConfigError(f"config key 'model.options.heads' must divide model.options.{width_name} "
                                    f"({width}), got {section.heads}")
        return section
    return check


def _beta_falls(section):
    if section.beta_end > section.beta_start:
        raise RecipeConfigError(f"config key 'model.options.beta_end' must be at most model.options.beta_start "
                                f"({section.beta_start}), got {section.beta_end}")
    return section


CHECKS: dict[str, tuple[Callable, ...]] = {
    "CrossRanker": (_room_for_the_context,),
    "GenerativeTransformer": (_heads_divide("d_model"),),
    "TransformerMemNet": (_heads_divide("dim"),),
    "BlocksDagger": (_beta_falls,),
}
"""The checks that join two options of a class (and of its subclasses), by class name."""


# ------------------------------------------------------------------------------- derivation
def yaml_part(hint: Any) -> Any:
    """The part of a type hint a YAML value can take (scalars, literals, lists and mappings of
    them): ``Union[str, Accelerator]`` -> ``str``; None when no part can."""
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        kept = [part for part in map(yaml_part, get_args(hint)) if part is not None]
        return Union[tuple(kept)] if kept else None
    if hint in (bool, int, float, str, type(None), list, dict) or origin is Literal:
        return hint
    if origin in (list, dict):
        return hint if all(yaml_part(argument) is not None for argument in get_args(hint)) else None
    return None


def _is_numeric(hint: Any) -> bool:
    if hint in (int, float):
        return True
    return get_origin(hint) in (Union, types.UnionType) and any(map(_is_numeric, get_args(hint)))


def _rule(owner: str, name: str, hint: Any, rules: dict[str, Any]) -> Any:
    """The rule ``rules`` give the option (``owner.name`` first), else its hint's YAML part."""
    rule = rules.get(f"{owner}.{name}", rules.get(name))
    if rule is not None:
        return rule
    if _is_numeric(hint):
        raise TypeError(f"{owner}'s option {name!r} is a number without a range: give it one in "
                        f"zoo/recipe_constraints.py")
    part = yaml_part(hint)
    return Any if part is None else part


def signature_fields(function: Callable, owner: str, rules: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """``{name: (rule, default)}`` of ``function``'s arguments that have a default: the type
    hint's YAML part, or ``rules``' rule for the name, and the signature's default."""
    hints = get_type_hints(function)
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return {name: (_rule(owner, name, hints.get(name, Any), rules), parameter.default)
            for name, parameter in inspect.signature(function).parameters.items()
            if parameter.kind in kinds and parameter.default is not parameter.empty}


def dataclass_fields(config: type, skip: tuple[str, ...], rules: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """:func:`signature_fields` of a config dataclass's fields (those in ``skip`` left out)."""
    hints = get_type_hints(config)
    return {field.name: (_rule(config.__name__, field.name, hints[field.name], rules), field.default)
            for field in fields(config) if field.name not in skip and field.default is not MISSING}


def options_section(cls: type, extra: dict[str, tuple[Any, Any]] | None = None, name: str | None = None) -> type:
    """The ``model.options`` section of ``cls``: its constructor's options (and ``extra``, the
    settings its ``**kwargs`` take) with their defaults and :data:`OPTION_RULES`' rules, and
    :data:`CHECKS`' checks of the class and its bases."""
    options = {**(extra or {}), **signature_fields(cls.__init__, cls.__name__, OPTION_RULES)}
    if "model_config" in options:  # pydantic's own name: the field is aliased
        rule, default = options.pop("model_config")
        options["model_config_"] = (rule, Field(default, alias="model_config"))
    checks = {f"_{check.__name__}_{index}": model_validator(mode="after")(check)
              for index, check in enumerate(check for base in reversed(cls.__mro__)
                                            for check in CHECKS.get(base.__name__, ()))}
    return create_model(name or f"{cls.__name__}Options", __base__=OpenSection, __validators__=checks, **options)


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


TRAINER_RULES: dict[str, Any] = {
    "accelerator": Literal[_accelerators()],
    "strategy": Literal[_strategies()],
    "precision": Optional[Literal[_precisions()]],
    "max_epochs": Optional[Annotated[int, Field(ge=-1)]],  # -1: no limit (Lightning's)
    "min_epochs": Optional[CountOrZero],
    "max_steps": Annotated[int, Field(ge=-1)],
    "min_steps": Optional[CountOrZero],
    "devices": Union[int, str, list[int]],
    "num_nodes": Annotated[int, Field(ge=1, le=65536)],
    "gradient_clip_val": Optional[NonNegative],
    "gradient_clip_algorithm": Optional[Literal["norm", "value"]],
    "log_every_n_steps": Optional[CountOrZero],
    "num_sanity_val_steps": Optional[Annotated[int, Field(ge=-1)]],  # -1: every batch
    "val_check_interval": Optional[Union[Count, Annotated[float, Field(gt=0, le=1)]]],
    "check_val_every_n_epoch": Optional[Count],
    **dict.fromkeys(("limit_train_batches", "limit_val_batches", "limit_test_batches", "limit_predict_batches"),
                    Optional[IntOrFraction]),
    "overfit_batches": IntOrFraction,
    "accumulate_grad_batches": Count,
    "fast_dev_run": Union[bool, CountOrZero],
    "reload_dataloaders_every_n_epochs": CountOrZero,
}
"""The ranges and choices of ``lightning.Trainer``'s arguments (the choices of ``accelerator``,
``strategy`` and ``precision``: Lightning's own registries)."""
