"""What a run prints: each warning once on one line, the libraries' chatter only with --verbose."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import logging, sys, warnings
    import lightning.pytorch  # sets its own loggers up at import, as in every recipe
    from zoo.console import configure_output

    configure_output(verbose=sys.argv[1] == "verbose")
    logging.getLogger("lightning.pytorch.utilities.rank_zero").info("GPU available: False, used: False")
    for _ in range(3):
        warnings.warn("the learning rate is\\n  very high")
    warnings.warn("Checkpoint directory /runs/x/checkpoints exists and is not empty.")
    print("done", file=sys.stderr)
""")


def run(mode: str) -> list[str]:
    completed = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    return completed.stderr.splitlines()


def test_by_default_a_warning_is_one_line_once_and_library_banners_are_off():
    assert run("quiet") == ["warning: the learning rate is very high (UserWarning)", "done"]


def test_verbose_brings_the_libraries_output_back():
    lines = run("verbose")
    assert any("GPU available" in line for line in lines)
    assert any("exists and is not empty" in line for line in lines)
    assert lines.count("warning: the learning rate is very high (UserWarning)") == 1


def test_library_progress_bars_stay_out_of_a_log_file():
    script = textwrap.dedent("""
        import sys
        from zoo.console import configure_output

        configure_output(verbose=False)
        from tqdm.auto import tqdm  # what transformers' GGUF loader draws with
        from transformers.utils import logging as hf_logging

        for _ in hf_logging.tqdm(range(3), desc="Loading weights"):
            pass
        for _ in tqdm(range(3), desc="Converting and de-quantizing GGUF tensors"):
            pass
        print("done", file=sys.stderr)
    """)
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert completed.stderr.splitlines() == ["done"]  # stderr is a pipe here, as in a background run's log
