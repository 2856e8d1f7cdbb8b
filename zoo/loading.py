"""What a model name given by a person means: a baseline's short name, a ``save_pretrained``
directory, or a released name; and, for Blocks, several names as one ensemble.

The command line, the games and the benchmarks all take such names, so they resolve them
here, in one place, and each refuses a model of the other benchmark in one line. The names
of the zoo itself (``create_model``, released names) are the factory's (:mod:`zoo.factory`),
imported when a name is resolved: the commands import this module to build their parsers,
which must not load torch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

BLOCKS_BASELINES = {"stop": "blocks-stop", "random": "blocks-random", "demonstrations": "blocks-demonstrations"}
LIGHT_BASELINES = {"random": "light-random", "ir": "light-ir", "fasttext": "light-fasttext",
                   "candidates-only": "light-candidates-only"}


def load_policy(name: str, seed: int = 0):
    """A Blocks baseline by short name, else a training run's ``.ckpt`` (any epoch, read with
    ``weights_only``), a checkpoint directory or a released name."""
    from zoo.factory import Grounded, create_model

    if name in BLOCKS_BASELINES:
        return create_model(BLOCKS_BASELINES[name], **({"seed": seed} if name == "random" else {}))
    if name.endswith(".ckpt") and Path(name).is_file():
        from zoo.models.blocks.policy import load_training_checkpoint

        try:
            return load_training_checkpoint(name).eval()
        except Exception as error:  # a checkpoint of another model, a truncated file, a refused pickle
            raise ValueError(f"--model {name}: not a Blocks policy training checkpoint "
                             f"({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''})") from None
    if Path(name).exists() and not Path(name).is_dir():
        raise ValueError(f"--model {name}: expected a save_pretrained directory or a .ckpt, got a file")
    try:
        policy = Grounded.from_pretrained(name)
    except KeyError as unknown:
        raise ValueError(f"unknown model {name!r}: not a baseline ({', '.join(BLOCKS_BASELINES)}), not a checkpoint "
                         f"directory, and not a released name ({unknown.args[0]})") from None
    if policy.domain != "blocks":
        raise ValueError(f"{name} is a {type(policy).__name__}, a {policy.domain or 'non-Blocks'} model; "
                         f"zoo eval blocks takes a Blocks policy")
    return policy


def load_policies(names: Sequence[str], seed: int = 0):
    """One policy, or the ensemble of several (their mean action probabilities, the paper's Table 3);
    several goal readers are one reader (their mean log-probabilities: ``GoalPredictorEnsemble``)."""
    policies = [load_policy(name, seed) for name in names]
    if len(policies) == 1:
        return policies[0]
    from zoo.models.blocks.ensemble import BlocksEnsemble
    from zoo.models.blocks.goal import BlocksGoalPredictor, GoalPredictorEnsemble

    if all(isinstance(policy, BlocksGoalPredictor) for policy in policies):  # readers: their mean map and block
        return GoalPredictorEnsemble(policies)

    return BlocksEnsemble(policies)


def load_ranker(name: str, seed: int = 0):
    """A LIGHT baseline by short name (fresh), else a ``save_pretrained`` directory or released name."""
    from zoo.factory import Grounded, create_model

    if name in LIGHT_BASELINES:
        return create_model(LIGHT_BASELINES[name], **({"seed": seed} if name == "random" else {}))
    model = Grounded.from_pretrained(name)
    if model.domain != "light":
        raise ValueError(f"{name} is a {type(model).__name__}, a {model.domain or 'non-LIGHT'} model; "
                         f"LIGHT commands take a LIGHT ranker")
    return model
