"""One module per model family; importing this package registers them all."""

from zoo.models.blocks_baselines import DemonstrationPolicy, RandomPolicy, StopPolicy

__all__ = ["DemonstrationPolicy", "RandomPolicy", "StopPolicy"]
