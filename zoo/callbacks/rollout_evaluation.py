"""``RolloutEvaluation``: the paper's metric during training, by playing the policy greedily."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Sequence

import lightning as L

from zoo.blocks.records import Example


class RolloutEvaluation(L.Callback):
    """At the end of every ``every_n_epochs``-th validation and of the run's last (its last
    epoch, or the step that reached ``trainer.max_steps``), logs ``<prefix>/mean_error``,
    ``median_error`` and ``min_mean_error`` of greedy rollouts on ``examples`` (e.g. the tuning
    set or dev), the share of them ended by STOP (``stop_rate``) and the rollout speed.
    Optionally writes an animation of the first ``gifs`` episodes to ``gif_dir`` (and to W&B
    when that is the logger)."""

    def __init__(self, examples: Sequence[Example], prefix: str = "dev", every_n_epochs: int = 1,
                 batch_size: int = 256, gifs: int = 0, gif_dir: str | Path | None = None, renderer=None):
        self.examples, self.prefix, self.every_n_epochs = examples, prefix, every_n_epochs
        self.batch_size, self.gifs = batch_size, gifs
        self.gif_dir = Path(gif_dir) if gif_dir else None
        self.renderer = renderer

    def on_validation_epoch_end(self, trainer: L.Trainer, pl_module) -> None:
        """Runs inside validation, so checkpoint callbacks that monitor these metrics see them."""
        from zoo.callbacks.final_validation import is_final_validation

        if trainer.sanity_checking or (trainer.current_epoch + 1) % self.every_n_epochs and not is_final_validation(trainer):
            return
        from zoo.blocks.evaluate import evaluate_policy
        from zoo.blocks.rollout import EpisodeRunner

        started = time.perf_counter()
        # Under DDP each rank plays its share and the metric gathers every episode's error.
        rank, world = trainer.global_rank, trainer.world_size
        examples = self.examples[rank::world] if world > 1 else self.examples
        result = evaluate_policy(pl_module, examples, self.batch_size,
                                 runner=EpisodeRunner(self.renderer, device=pl_module.device), progress=False)
        seconds = time.perf_counter() - started
        pl_module.log_dict({
            f"{self.prefix}/mean_error": result["mean"],
            f"{self.prefix}/median_error": result["median"],
            f"{self.prefix}/min_mean_error": result["min_mean"],
            f"{self.prefix}/stop_rate": result["stop_rate"],
            f"{self.prefix}/episodes_per_s": result["n"] / seconds,
            f"{self.prefix}/steps_per_s": result["steps"] * world / seconds,
        }, prog_bar=False, sync_dist=world > 1)  # equal on every rank already; this only quiets Lightning
        if self.gifs and self.gif_dir is not None and trainer.is_global_zero:
            self._write_animations(trainer, pl_module)

    def _write_animations(self, trainer, pl_module) -> None:
        from zoo.blocks.episode_animation import render_episode

        self.gif_dir.mkdir(parents=True, exist_ok=True)
        paths = [render_episode(pl_module, example, self.gif_dir / f"epoch{trainer.current_epoch:03d}-{i}.gif")
                 for i, example in enumerate(self.examples[: self.gifs])]
        experiment = getattr(trainer.logger, "experiment", None)
        if experiment is not None and hasattr(experiment, "log") and type(trainer.logger).__name__ == "WandbLogger":
            import wandb

            experiment.log({f"{self.prefix}/rollouts": [wandb.Video(str(p), format="gif") for p in paths]})
