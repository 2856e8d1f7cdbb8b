"""Fault injection (issue 12): a training run killed with SIGKILL at an arbitrary moment
resumes to exactly the weights of an uninterrupted run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import torch
from safetensors.torch import load_file

REPO = Path(__file__).resolve().parent.parent
TINY = [
    "data.source=procedural", "data.procedural_sizes={train: 6, dev: 2, test: 2}", "data.batch_size=8",
    "bandit.episodes_per_batch=4", "bandit.warmup_epochs=1", "model.embedding_dim=8", "model.lstm_dim=8",
    "model.image_dim=8", "model.conv_channels=4", "model.block_embedding_dim=4", "model.direction_embedding_dim=4",
    "model.hidden_dim=8", "evaluation.gifs=0", "checkpoint.every_n_train_steps=1", "logger.kind=none",
    "trainer.enable_progress_bar=false", "trainer.enable_model_summary=false", "threads=1", "trainer.max_epochs=3",
]


def launch(run_dir: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, str(REPO / "recipes" / "blocks_policy.py"), *TINY, *extra,
                             f"run_dir={run_dir}"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_a_bandit_run_killed_with_sigkill_resumes_to_identical_weights(tmp_path):
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    assert launch(straight, "method=bandit").wait(timeout=600) == 0
    process = launch(killed, "method=bandit")
    last = killed / "checkpoints" / "last.ckpt"
    deadline = time.monotonic() + 600
    while not last.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # somewhere in the middle of the next steps
    if process.poll() is None:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        assert not (killed / "pretrained").exists()
    assert launch(killed, "method=bandit").wait(timeout=600) == 0
    first = load_file(str(straight / "pretrained" / "model.safetensors"))
    second = load_file(str(killed / "pretrained" / "model.safetensors"))
    for name in first:
        torch.testing.assert_close(first[name], second[name], rtol=0, atol=0, msg=name)
