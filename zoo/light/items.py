"""``LightItem``: what a LIGHT model receives, the type shared by the data module and every model.

:class:`~zoo.light.datamodule.LightDataset` yields these; each LIGHT model's ``collate`` turns
a list of them into tensors. Kept apart from the data module (which imports torch and
Lightning) so that a model, or anything typed against an item, needs only this small module.
"""

from __future__ import annotations

from dataclasses import dataclass

from zoo.light.examples import LightExample


@dataclass(frozen=True)
class LightItem:
    """One ranking item: the context so far, the candidates, the gold's index, the example."""

    context: str
    candidates: tuple[str, ...]
    label: int
    example: LightExample
