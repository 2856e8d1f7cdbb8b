"""Ensembles of Blocks policies: the paper's Table 3 averages action probabilities."""

from __future__ import annotations

from typing import Any, Sequence

import torch
from torch import nn

from zoo.blocks.observation import BlocksObservation
from zoo.models.blocks.agent import BlocksAgent
from zoo.registry import register_model


@register_model("blocks-ensemble", defaults={"members": [{"model_class": "BlocksStop", "config": {}}]},
                description="the mean action probabilities of several Blocks policies (the paper's Table 3)")
class BlocksEnsemble(BlocksAgent):
    """Acts by the mean of its members' action probabilities.

    Each member tokenises the instruction with its own vocabulary, so policies trained
    separately (different seeds, different data orders) can be combined. An ensemble saves
    like any model (``save_pretrained``: one ``config.json`` holding each member's class and
    configuration, the members' weights together), so three seeds release as one name.
    """

    def __init__(self, policies: Sequence[BlocksAgent] | None = None, members: Sequence[dict] | None = None):
        super().__init__()
        if (policies is None) == (members is None):
            raise ValueError("an ensemble takes either policies or members (their saved configurations)")
        if members is not None:
            policies = [build_member(member, index) for index, member in enumerate(members)]
        if not policies:
            raise ValueError("an ensemble needs at least one policy")
        self.members = nn.ModuleList(policies)
        # Each member tokenises with its own vocabulary, so the ensemble reads no instructions itself.
        self.needs_images = any(p.needs_images for p in policies)
        self.needs_demonstrations = any(p.needs_demonstrations for p in policies)

    def config(self) -> dict:
        return {"members": [{"model_class": type(m).__name__, "config": m.config()} for m in self.members]}

    def action_probabilities(self, observation: BlocksObservation) -> torch.Tensor:
        return torch.stack([member.action_probabilities(observation) for member in self.members]).mean(dim=0)


def build_member(member: Any, index: int) -> BlocksAgent:
    """One member from its saved ``{"model_class", "config"}``: a Blocks policy class the zoo
    knows, never code named by the file (``from_pretrained`` has already refused configs that
    ask for remote code, members' included)."""
    from zoo.registry import registered_class as model_class  # the Blocks classes: registered with this package

    if not isinstance(member, dict) or set(member) != {"model_class", "config"} \
            or not isinstance(member["model_class"], str) or not isinstance(member["config"], dict):
        raise ValueError(f"ensemble member {index} must be {{'model_class': str, 'config': object}}")
    try:
        target = model_class(member["model_class"])
    except KeyError as error:  # an unknown or retired class name: its one line, naming the member
        raise ValueError(f"ensemble member {index}: {error.args[0]}") from None
    if not issubclass(target, BlocksAgent) or target is BlocksEnsemble:
        raise ValueError(f"ensemble member {index} is a {target.__name__}, not a Blocks policy")
    return target(**member["config"])
