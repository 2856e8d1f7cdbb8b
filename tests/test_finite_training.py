"""A run whose loss or weights stop being finite ends there in one line naming the step and the
run, keeps only finite checkpoints and exports nothing (zoo/callbacks/finite_training.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import lightning as L
import pytest
import torch
from omegaconf import OmegaConf

from zoo.callbacks.finite_training import exit_unless_finite, non_finite_parameter
from zoo.experiment import checkpointing, fit_resuming, make_trainer

RECIPE = Path(__file__).resolve().parent.parent / "recipes" / "blocks_policy.py"


class Regression(L.LightningModule):
    """A linear fit whose loss (``poison="loss"``) or a weight the loss does not read
    (``poison="weights"``) turns nan from the ``poison_at``-th step on."""

    def __init__(self, poison: str, poison_at: int):
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)
        self.unused = torch.nn.Parameter(torch.zeros(1))
        self.poison, self.poison_at = poison, poison_at

    def training_step(self, batch, batch_idx):
        poisoned = self.global_step + 1 >= self.poison_at
        if self.poison == "weights" and poisoned:
            with torch.no_grad():
                self.unused.fill_(float("inf"))
        loss = self.layer(batch).pow(2).mean()
        return loss * float("nan") if self.poison == "loss" and poisoned else loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)

    def train_dataloader(self):
        return torch.utils.data.DataLoader(torch.randn(16, 2), batch_size=2)


def train(run_dir: Path, model: Regression) -> str:
    """Fit ``model`` as a zoo run does (checkpoints every step); the one-line message it stops with."""
    trainer = make_trainer(OmegaConf.create({"max_epochs": 1, "accelerator": "cpu", "devices": 1,
                                             "enable_progress_bar": False}),
                           run_dir, checkpointing(run_dir, every_n_train_steps=1), logger=False)
    with pytest.raises(SystemExit) as stopped:
        fit_resuming(trainer, model, None, run_dir)
    message = str(stopped.value)
    assert "\n" not in message
    return message


def last_checkpoint(run_dir: Path) -> tuple[int, bool]:
    """(the step ``last.ckpt`` was written at, whether its weights are all finite)."""
    saved = torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=True)
    return saved["global_step"], all(bool(tensor.isfinite().all()) for tensor in saved["state_dict"].values())


def test_a_nan_loss_stops_the_run_at_its_step_in_one_line(tmp_path):
    message = train(tmp_path, Regression("loss", poison_at=3))
    assert message == (f"training diverged at step 3 of the run in {tmp_path}: the training loss is nan; nothing was "
                       f"exported and its checkpoints keep the last finite weights; train again in a new run_dir "
                       f"with a smaller learning rate")
    assert last_checkpoint(tmp_path) == (2, True)


def test_weights_gone_inf_are_never_checkpointed(tmp_path):
    """The loss is still finite when a weight breaks: the checkpoint about to be written stops the run."""
    message = train(tmp_path, Regression("weights", poison_at=3))
    assert message.startswith(f"training diverged at step 3 of the run in {tmp_path}: weight 'unused' holds inf or nan;")
    assert last_checkpoint(tmp_path) == (2, True)  # step 3's checkpoint was never written


def test_non_finite_weights_are_not_exported(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 1))
    assert non_finite_parameter(model) is None
    exit_unless_finite(model, tmp_path / "pretrained")
    with torch.no_grad():
        model[1].bias.fill_(float("nan"))
    assert non_finite_parameter(model) == "1.bias"
    with pytest.raises(SystemExit, match=r"refusing to export .*pretrained: weight '1.bias' holds inf or nan"):
        exit_unless_finite(model, tmp_path / "pretrained")


@pytest.mark.slow
def test_a_dagger_run_that_diverges_exports_nothing(tmp_path, monkeypatch):
    """DAgger whose cross-entropy overflows (as a learning rate of 1e300 made it) stops at its
    first step; before, it trained on to nan weights and exported them as its best policy."""
    from blocks_learners_support import TINY_POLICY

    from zoo.models.blocks import losses

    supervised_loss = losses.supervised_loss
    monkeypatch.setattr(losses, "supervised_loss", lambda *args, **kwargs: supervised_loss(*args, **kwargs) * float("inf"))
    spec = importlib.util.spec_from_file_location("blocks_policy_recipe", RECIPE)
    recipe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recipe)
    run_dir = tmp_path / "dagger"
    with pytest.raises(SystemExit) as stopped:
        recipe.main(["model.name=blocks-dagger", "data.source=procedural", "data.procedural_sizes={train: 6, dev: 2, test: 2}",
                     "data.episodes_per_batch=4", "loop.batch_size=8", "evaluation.gifs=0", "logger.kind=none",
                     "trainer.max_epochs=1", "trainer.enable_progress_bar=false", "threads=1",
                     *(f"model.options.{key}={value}" for key, value in TINY_POLICY.items()), f"run_dir={run_dir}"])
    message = str(stopped.value)
    assert "\n" not in message and message.startswith(f"training diverged at step 4 of the run in {run_dir}: ")
    assert not (run_dir / "pretrained").exists()
