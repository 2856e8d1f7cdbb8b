"""A resumed or rerun training run reports the time all its legs spent training, not the last leg's."""

from __future__ import annotations

import time

import lightning as L
from lightning.pytorch.demos.boring_classes import BoringModel

from zoo.callbacks.train_clock import TrainClock


class SlowBoringModel(BoringModel):
    def training_step(self, batch, batch_idx):
        time.sleep(0.02)
        return super().training_step(batch, batch_idx)


def fit(tmp_path, max_epochs: int, ckpt_path: str | None = None) -> tuple[TrainClock, L.Trainer]:
    clock = TrainClock()
    trainer = L.Trainer(default_root_dir=tmp_path, max_epochs=max_epochs, limit_train_batches=10, limit_val_batches=0,
                        logger=False, enable_progress_bar=False, enable_model_summary=False, callbacks=[clock])
    trainer.fit(SlowBoringModel(), ckpt_path=ckpt_path)
    return clock, trainer


def test_a_resumed_run_adds_its_legs_and_a_rerun_of_a_finished_one_keeps_the_total(tmp_path):
    first, trainer = fit(tmp_path, max_epochs=1)
    assert first.seconds >= 10 * 0.02
    trainer.save_checkpoint(tmp_path / "one.ckpt", weights_only=False)

    second, trainer = fit(tmp_path, max_epochs=2, ckpt_path=str(tmp_path / "one.ckpt"))
    assert second.seconds >= first.seconds + 10 * 0.02  # both epochs counted
    trainer.save_checkpoint(tmp_path / "two.ckpt", weights_only=False)

    rerun, _ = fit(tmp_path, max_epochs=2, ckpt_path=str(tmp_path / "two.ckpt"))  # nothing left to train
    assert second.seconds <= rerun.seconds < second.seconds + 0.5


def test_the_clock_survives_a_weights_only_load():
    import io

    import torch

    trained = TrainClock()
    trained.load_state_dict({"seconds": 12.5})
    buffer = io.BytesIO()
    torch.save({"callbacks": {"TrainClock": trained.state_dict()}}, buffer)
    buffer.seek(0)
    clock = TrainClock()
    clock.load_state_dict(torch.load(buffer, weights_only=True)["callbacks"]["TrainClock"])
    assert clock.seconds == 12.5
