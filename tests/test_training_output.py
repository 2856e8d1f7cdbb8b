"""What a training run prints and how it ends, as a user running it in a terminal or a log meets it:
no progress bar redrawn into a file, no notice about Lightning's logging interval on a small run,
and an exit code that tells a run stopped on request from one that failed."""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import sys
import threading
from pathlib import Path

import lightning as L
import pytest

from test_run_directory import BLOCKS_TINY, blocks_recipe

REPO = Path(__file__).resolve().parent.parent


def run_with_terminal_stderr(*args: str, cwd: Path) -> tuple[int, str, str]:
    """Run ``python -m zoo.cli ARGS`` with stdout a pipe (``> train.log``) and stderr a terminal;
    (exit code, stdout, what the terminal showed)."""
    terminal, child_side = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen([sys.executable, "-m", "zoo.cli", *args], cwd=cwd, env=env,
                               stdout=subprocess.PIPE, stderr=child_side)
    os.close(child_side)
    shown: list[bytes] = []

    def read_terminal() -> None:  # a terminal nobody reads fills up and blocks the writer
        while True:
            try:
                chunk = os.read(terminal, 4096)
            except OSError:
                return
            if not chunk:
                return
            shown.append(chunk)

    reader = threading.Thread(target=read_terminal, daemon=True)
    reader.start()
    out, _ = process.communicate(timeout=300)
    reader.join(timeout=10)
    os.close(terminal)
    return process.returncode, out.decode(), b"".join(shown).decode(errors="replace")


@pytest.mark.slow
def test_stdout_to_a_file_gets_no_progress_bar_and_a_small_run_no_logging_interval_notice(tmp_path):
    """Lightning draws its bar on stdout: with stdout in a file it would leave a frame of blank-padded
    lines there, so progress goes to the terminal as lines instead."""
    code, out, shown = run_with_terminal_stderr("train", "blocks-supervised", "--tiny", "logger.kind=csv",
                                                "trainer.max_epochs=2", f"run_dir={tmp_path / 'run'}", cwd=tmp_path)
    assert code == 0, shown[-2000:]
    assert out == ""  # the bar would be here
    assert "training BlocksSupervised: 6 batches per epoch" in shown and "epoch 1 done" in shown
    assert "logging interval" not in shown  # 6 batches < trainer.log_every_n_steps=20: nothing wrong


class SendSignal(L.Callback):
    """Sends ``signum`` to this process at the end of training batch ``at``."""

    def __init__(self, signum: int, at: int = 2):
        self.signum, self.at = signum, at

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if batch_idx == self.at:
            os.kill(os.getpid(), self.signum)


@pytest.mark.slow
@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_run_stopped_by_a_signal_exits_128_plus_its_number_with_a_checkpoint(tmp_path, signum, code):
    run_dir = tmp_path / "run"
    argv = [*BLOCKS_TINY, "model.name=blocks-supervised", f"run_dir={run_dir}"]
    with pytest.raises(SystemExit) as stopped:
        blocks_recipe().main(argv, extra_callbacks=[SendSignal(signum)])
    assert stopped.value.code == code  # as a shell reports a process the signal ended; 1 is a failure
    assert str(stopped.value).startswith("stopped on request;") and "the same command resumes it" in str(stopped.value)
    assert (run_dir / "checkpoints" / "last.ckpt").is_file() and not (run_dir / "pretrained").exists()
    assert blocks_recipe().main(argv) == 0  # and it resumes
