"""Faults around a run directory: SIGKILL while checkpoints are written on another filesystem
than the temporary directory, a full disk, and two recipes started into one run directory."""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

REPO = Path(__file__).resolve().parent.parent
TINY = ["data.source=procedural", "data.procedural_sizes={train: 6, dev: 2, test: 2}", "data.batch_size=8",
        "model.options.embedding_dim=8", "model.options.lstm_dim=8", "model.options.image_dim=8", "model.options.conv_channels=4",
        "model.options.block_embedding_dim=4", "model.options.direction_embedding_dim=4", "model.options.hidden_dim=8", "evaluation.gifs=0",
        "logger.kind=none", "trainer.enable_progress_bar=false", "threads=1", "model.name=blocks-supervised"]
LARGE = [*TINY[:3], "evaluation.gifs=0", "logger.kind=none", "trainer.enable_progress_bar=false", "threads=1",
         "model.name=blocks-supervised"]  # the paper's model sizes: checkpoints of about 8 MB

pytestmark = pytest.mark.slow


@pytest.fixture
def tmpfs(tmp_path):
    """Mount a small tmpfs (another filesystem than $TMPDIR) at ``tmp_path/mnt``: yields a
    function ``mount(size)`` returning the mount point. Needs root; skipped otherwise."""
    mounted = []

    def mount(size: str) -> Path:
        point = tmp_path / f"mnt{len(mounted)}"
        point.mkdir()
        if os.geteuid() != 0:
            pytest.skip("mounting a tmpfs needs root")
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(point)], capture_output=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs: {done.stderr.decode().strip()}")
        mounted.append(point)
        return point

    yield mount
    for point in mounted:
        subprocess.run(["umount", "-l", str(point)], check=False)


def launch(run_dir: Path, temporary: Path, *overrides: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(temporary)}
    return subprocess.Popen([sys.executable, str(REPO / "recipes" / "blocks_policy.py"), *overrides, f"run_dir={run_dir}"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def whole(checkpoint: Path) -> bool:
    try:
        torch.load(checkpoint, map_location="cpu", weights_only=True)
        return True
    except Exception:
        return False


def staged_in(temporary: Path) -> list[Path]:
    """Files under ``temporary`` (torch's compile cache folder, made at import, aside)."""
    return [p for p in temporary.rglob("*") if p.is_file() and not p.relative_to(temporary).parts[0].startswith("torchinductor")]


def test_sigkill_during_checkpoint_saves_on_another_filesystem_leaves_only_whole_files(tmpfs, tmp_path):
    mount = tmpfs("256m")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    run_dir = mount / "run"
    overrides = [*LARGE, "checkpoint.every_n_train_steps=1", "trainer.max_epochs=50"]
    rng = random.Random(0)
    kills, staged_leftovers = 0, 0
    for _ in range(8):
        process = launch(run_dir, temporary, *overrides)
        last = run_dir / "checkpoints" / "last.ckpt"
        deadline = time.monotonic() + 300
        while not last.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(rng.uniform(0.0, 0.5))
        staging = time.monotonic() + 30
        while time.monotonic() < staging and process.poll() is None \
                and not any(p.name.endswith(".tmp") for p in (run_dir / "checkpoints").iterdir()):
            pass  # the kill lands while a checkpoint is being written
        assert process.poll() is None, process.stderr.read()
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        kills += 1
        checkpoints = sorted((run_dir / "checkpoints").iterdir())
        finals = [p for p in checkpoints if not p.name.startswith(".")]
        staged_leftovers += len(checkpoints) - len(finals)
        assert finals and all(whole(p) for p in finals), [p.name for p in finals]
        assert all(re.fullmatch(r"\.[\w-]+\.ckpt\.\w+\.tmp", p.name) for p in checkpoints if p.name.startswith("."))
        assert not staged_in(temporary)  # nothing staged in $TMPDIR
    print(f"kills {kills}, killed mid-save (staging file left beside the checkpoint) {staged_leftovers}, "
          "torn checkpoints 0, files left in $TMPDIR 0")
    assert staged_leftovers > 0  # the kills did land inside saves
    process = launch(run_dir, temporary, *[o for o in overrides if not o.startswith("trainer.max_epochs")],
                     "trainer.max_epochs=1", "resume.allow_changed=[trainer.max_epochs]")
    assert process.wait(timeout=300) == 0, process.stderr.read()  # resumes from a whole last.ckpt
    assert not [p for p in (run_dir / "checkpoints").iterdir() if p.name.startswith(".")]  # leftovers cleared


def test_a_full_disk_is_one_line_and_the_previous_checkpoints_stay_whole(tmpfs, tmp_path):
    run_dir = tmpfs("600k") / "run"
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    process = launch(run_dir, temporary, *TINY, "trainer.max_epochs=8")
    _, stderr = process.communicate(timeout=600)
    assert process.returncode != 0
    last_line = stderr.strip().splitlines()[-1]
    assert "Traceback" not in stderr, stderr[-3000:]
    assert re.search(r"cannot write (checkpoint|to) .*No space left on device", last_line), last_line
    finals = [p for p in (run_dir / "checkpoints").iterdir()]
    assert finals and all(whole(p) for p in finals if p.suffix == ".ckpt")
    assert not [p for p in finals if p.name.startswith(".")]
    assert OmegaConf.load(run_dir / "config.yaml").seed == 0


def test_two_recipes_started_into_one_run_directory_one_is_refused_naming_the_holder(tmp_path):
    run_dir = tmp_path / "run"
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    processes = {seed: launch(run_dir, temporary, *TINY, "trainer.max_epochs=6", f"seed={seed}") for seed in (1, 2)}
    outcomes = {seed: (process.wait(timeout=600), process.stderr.read()) for seed, process in processes.items()}
    winners = [seed for seed, (code, _) in outcomes.items() if code == 0]
    assert len(winners) == 1, outcomes
    winner = winners[0]
    loser = 3 - winner
    code, stderr = outcomes[loser]
    line = stderr.strip().splitlines()[-1]
    assert code != 0 and len(stderr.strip().splitlines()) == 1, stderr
    assert re.search(rf"is in use by pid {processes[winner].pid} on \S+ \(started ", line), line
    assert OmegaConf.load(run_dir / "config.yaml").seed == winner
    assert not [p for p in (run_dir / "checkpoints").iterdir() if p.name.startswith(".")]
