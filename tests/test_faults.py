"""Fault injection: a training run killed with SIGKILL at an arbitrary moment
resumes to exactly the weights of an uninterrupted run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

REPO = Path(__file__).resolve().parent.parent
TINY = [
    "data.source=procedural", "data.procedural_sizes={train: 6, dev: 2, test: 2}", "data.batch_size=8",
    "data.episodes_per_batch=4", "model.options.embedding_dim=8", "model.options.lstm_dim=8",
    "model.options.image_dim=8", "model.options.conv_channels=4", "model.options.block_embedding_dim=4", "model.options.direction_embedding_dim=4",
    "model.options.hidden_dim=8", "evaluation.gifs=0", "checkpoint.every_n_train_steps=1", "logger.kind=none",
    "trainer.enable_progress_bar=false", "trainer.enable_model_summary=false", "threads=1", "trainer.max_epochs=3",
]


def objective(method: str) -> list[str]:
    """The overrides that pick ``method``'s recipe; a bandit warms up for one supervised epoch."""
    return [f"model.name=blocks-{method}", *(["start.warmup_epochs=1"] if method == "bandit" else [])]


def launch(run_dir: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, str(REPO / "recipes" / "blocks_policy.py"), *TINY, *extra,
                             f"run_dir={run_dir}"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["supervised", "bandit", "dqn"])
def test_a_run_killed_with_sigkill_resumes_to_identical_weights(tmp_path, method):
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    assert launch(straight, *objective(method)).wait(timeout=600) == 0
    process = launch(killed, *objective(method))
    last = killed / "checkpoints" / "last.ckpt"
    deadline = time.monotonic() + 600
    while not last.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # somewhere in the middle of the next steps
    if process.poll() is None:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        assert not (killed / "pretrained").exists()
    assert launch(killed, *objective(method)).wait(timeout=600) == 0
    first = load_file(str(straight / "pretrained" / "model.safetensors"))
    second = load_file(str(killed / "pretrained" / "model.safetensors"))
    for name in first:
        torch.testing.assert_close(first[name], second[name], rtol=0, atol=0, msg=name)


@pytest.mark.slow
def test_a_killed_light_sim_build_leaves_the_old_corpus_or_none_and_a_retry_matches(tmp_path):
    """SIGKILL during `zoo light sim`: the destination holds nothing half-written, and the
    next build (which clears the killed build's staging directory) equals an uninterrupted one."""

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "zoo.cli", "light", "sim", "--preset", "tiny", "--world", "authored"]
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    subprocess.run([*command, "--out", str(straight)], env=env, check=True, capture_output=True, timeout=600)
    process = subprocess.Popen([*command, "--out", str(killed)], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    if process.poll() is None:
        os.kill(process.pid, signal.SIGKILL)
    process.wait()
    from zoo.light.sim import MANIFEST

    assert not killed.exists() or (killed / MANIFEST).is_file()  # nothing, or a whole corpus
    for leftover in tmp_path.glob(".killed.*"):  # a killed build's staging directory, as if an hour old
        os.utime(leftover, (time.time() - 7200, time.time() - 7200))
    subprocess.run([*command, "--out", str(killed)], env=env, check=True, capture_output=True, timeout=600)
    assert not list(tmp_path.glob(".killed.*"))
    names = sorted(p.name for p in straight.iterdir())
    assert sorted(p.name for p in killed.iterdir()) == names
    for name in names:
        if name.endswith(".pkl"):
            assert (killed / name).read_bytes() == (straight / name).read_bytes()


def test_a_killed_download_is_retried_to_the_verified_file_and_its_leftover_removed(tmp_path):
    from zoo.hub import download_file, remove_stale_downloads

    payload = os.urandom(1 << 16)
    dest = tmp_path / "model.safetensors"
    leftover = dest.with_name(f"{dest.name}.0123abcd.download")  # what a SIGKILLed transfer leaves
    leftover.write_bytes(payload[:1000])
    source = tmp_path / "source.bin"
    source.write_bytes(payload)
    import hashlib

    download_file(str(source), hashlib.sha256(payload).hexdigest(), dest, progress=False)
    assert dest.read_bytes() == payload and leftover.exists()  # a young leftover may be a live transfer
    os.utime(leftover, (time.time() - 7200, time.time() - 7200))
    remove_stale_downloads(dest)
    assert not leftover.exists()


def test_concurrent_writers_of_one_cache_entry_and_one_corpus_directory(tmp_path):
    import hashlib
    from concurrent.futures import ThreadPoolExecutor

    from zoo.safe_writes import MARKER_NAME, replace_directory
    from zoo.hub import download_file

    payload = os.urandom(1 << 18)
    source = tmp_path / "source.bin"
    source.write_bytes(payload)
    digest = hashlib.sha256(payload).hexdigest()
    dest = tmp_path / "cache" / "model.safetensors"
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda _: download_file(str(source), digest, dest, progress=False), range(8)))
    assert dest.read_bytes() == payload and not list(dest.parent.glob("*.download"))

    def write(index: int) -> None:
        with replace_directory(tmp_path / "corpus", kind="corpus") as staging:
            (staging / "data.txt").write_text(f"writer {index}\n" * 1000)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(write, range(8)))
    corpus = tmp_path / "corpus"
    assert sorted(p.name for p in corpus.iterdir()) == [MARKER_NAME, "data.txt"]
    text = (corpus / "data.txt").read_text()
    assert len(set(text.splitlines())) == 1  # one writer's whole file, never a mix
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "corpus", "source.bin"]


@pytest.mark.slow
def test_sigterm_stops_at_a_batch_boundary_with_a_checkpoint_that_resumes_identically(tmp_path):
    straight, stopped = tmp_path / "straight", tmp_path / "stopped"
    assert launch(straight, "model.name=blocks-supervised").wait(timeout=600) == 0
    process = launch(stopped, "model.name=blocks-supervised")
    deadline = time.monotonic() + 600
    last = stopped / "checkpoints" / "last.ckpt"
    while not last.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)  # training has begun (and the handler is installed) once a checkpoint exists
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        started = time.monotonic()
        code = process.wait(timeout=120)
        assert time.monotonic() - started < 60
        assert code == 143  # stopped by GracefulStop (128 + SIGTERM, with a message), not killed by the signal (-15)
        assert not (stopped / "pretrained").exists()  # a stopped run exports nothing
    assert launch(stopped, "model.name=blocks-supervised").wait(timeout=600) == 0
    first = load_file(str(straight / "pretrained" / "model.safetensors"))
    second = load_file(str(stopped / "pretrained" / "model.safetensors"))
    for name in first:
        torch.testing.assert_close(first[name], second[name], rtol=0, atol=0, msg=name)
