"""What a run prints: each warning once on one line, the libraries' chatter only with --verbose."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import logging, sys, warnings
    import lightning.pytorch  # sets its own loggers up at import, as in every recipe
    from zoo.run_logging import configure_output

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


@pytest.mark.slow
def test_by_default_a_warning_is_one_line_once_and_library_banners_are_off():
    assert run("quiet") == ["warning: the learning rate is very high (UserWarning)", "done"]


@pytest.mark.slow
def test_verbose_brings_the_libraries_output_back():
    lines = run("verbose")
    assert any("GPU available" in line for line in lines)
    assert any("exists and is not empty" in line for line in lines)
    assert lines.count("warning: the learning rate is very high (UserWarning)") == 1


@pytest.mark.slow
def test_library_progress_bars_stay_out_of_a_log_file():
    script = textwrap.dedent("""
        import sys
        from zoo.run_logging import configure_output

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


EXPORT_AND_LOAD = textwrap.dedent("""
    import logging, sys, tempfile
    from pathlib import Path

    logging.basicConfig(level=logging.INFO, format="%(message)s")  # as the recipes set it up
    from zoo.run_logging import configure_output

    configure_output(verbose=sys.argv[1] == "verbose")
    from light_rankers_support import make_tiny_backbone
    from transformers import BertForSequenceClassification

    from zoo.grounded import Grounded
    from zoo.models.bi_ranker import BiRanker

    backbone = make_tiny_backbone(Path(sys.argv[2]) / "bert")
    print("export", file=sys.stderr)
    model = BiRanker(backbone=str(backbone), max_context_tokens=48, max_grounding_tokens=16)
    model.save_pretrained(Path(sys.argv[2]) / "exported", max_shard_size=64 * 1024)  # sharded
    print("load", file=sys.stderr)
    Grounded.from_pretrained(Path(sys.argv[2]) / "exported")
    print("a head the checkpoint lacks", file=sys.stderr)
    BertForSequenceClassification.from_pretrained(str(backbone))  # a real problem: weights left random
    print("done", file=sys.stderr)
""")

CHATTER = ("successfully saved", "checkpoint shards", "Loading weights", "Writing model shards", "it/s")


def export_and_load_on_a_terminal(mode: str, tmp_path) -> list[str]:
    """The script's output on a terminal (where progress bars are drawn), one entry a line."""
    import os

    import pexpect

    tests = os.path.dirname(os.path.abspath(__file__))
    switches = ("HF_HUB_DISABLE_PROGRESS_BARS", "TQDM_DISABLE", "TRANSFORMERS_VERBOSITY")  # configure_output's own
    env = {key: value for key, value in os.environ.items() if key not in switches}
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(tests), tests])
    child = pexpect.spawn(sys.executable, ["-c", EXPORT_AND_LOAD, mode, str(tmp_path)], env=env, timeout=300,
                          encoding="utf-8", dimensions=(24, 200))
    child.expect(pexpect.EOF)
    output = child.before
    child.close()
    assert child.exitstatus == 0, output[-3000:]
    return output.replace("\r\n", "\n").split("\n")


@pytest.mark.slow
def test_an_export_and_a_load_say_nothing_but_the_warning_that_matters(tmp_path):
    lines = export_and_load_on_a_terminal("quiet", tmp_path)
    text = "\n".join(lines)
    assert not [chatter for chatter in CHATTER if chatter in text], text
    assert lines[:3] == ["export", "load", "a head the checkpoint lacks"]
    assert "MISSING" in text and "classifier.weight" in text  # transformers' load report of the missing head
    assert lines[-2:] == ["done", ""]


@pytest.mark.slow
def test_verbose_keeps_the_libraries_save_notices_and_bars(tmp_path):
    text = "\n".join(export_and_load_on_a_terminal("verbose", tmp_path))
    assert "Model weights successfully saved to" in text and "checkpoint shards" in text
    assert "Loading weights" in text


@pytest.mark.slow
def test_library_notices_logged_under_a_file_path_name_are_chatter_but_their_warnings_stay(tmp_path):
    """huggingface_hub names its serialization loggers by file path, outside its own logger tree."""
    script = textwrap.dedent("""
        import logging, sys
        logging.basicConfig(level=logging.INFO, format="%(message)s")
        from zoo.run_logging import configure_output

        configure_output(verbose=False)
        import torch
        from huggingface_hub import save_torch_state_dict
        from huggingface_hub.serialization import _torch
        from huggingface_hub.utils import logging as hub_logging

        state = {"a": torch.zeros(64), "b": torch.zeros(64)}
        save_torch_state_dict(state, sys.argv[1], max_shard_size=300)  # the shard and the saved notices
        hub_logging.get_logger(_torch.__file__).warning("a shard could not be written")
        logging.getLogger("zoo.training").info("exported the policy")
    """)
    completed = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True,
                               timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert completed.stderr.splitlines() == ["a shard could not be written", "exported the policy"]


RANKED = textwrap.dedent("""
    import logging, sys, warnings
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    from zoo.run_logging import configure_output

    configure_output(verbose=False)
    log = logging.getLogger("zoo.progress")
    log.info("epoch 0 step 10/100")
    log.warning("the tuning set is empty")
    warnings.warn("the learning rate is very high")
""")


def run_as_rank(rank: int, world: int) -> list[str]:
    import os

    env = {**os.environ, "WORLD_SIZE": str(world), "RANK": str(rank), "LOCAL_RANK": str(rank)}
    completed = subprocess.run([sys.executable, "-c", RANKED], capture_output=True, text=True, timeout=120, env=env)
    assert completed.returncode == 0, completed.stderr
    return completed.stderr.splitlines()


def test_under_ddp_every_line_names_its_rank_and_only_rank_zero_reports_progress():
    assert run_as_rank(0, 2) == ["[rank 0] epoch 0 step 10/100", "[rank 0] the tuning set is empty",
                                 "[rank 0] warning: the learning rate is very high (UserWarning)"]
    assert run_as_rank(1, 2) == ["[rank 1] the tuning set is empty",
                                 "[rank 1] warning: the learning rate is very high (UserWarning)"]


def test_a_single_process_has_no_rank_label():
    assert run_as_rank(0, 1) == ["epoch 0 step 10/100", "the tuning set is empty",
                                 "warning: the learning rate is very high (UserWarning)"]
