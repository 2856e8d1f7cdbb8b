"""Hostile files: nothing in a model folder runs, and deep or oversized inputs end in one line.

Each command runs as a subprocess, so a crash of the interpreter (a segfault shows as
return code 139 / -11) fails the test instead of taking pytest down with it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CHECKPOINTS = REPO / "checkpoints"
DEEP = 2_000_000


def zoo_env(data_dir: Path | None = None) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO), WANDB_MODE="offline", OMP_NUM_THREADS="1")
    if data_dir is not None:
        env["ZOO_DATA_DIR"] = str(data_dir)
    return env


def run_zoo(*args: str, env: dict, cwd: Path = REPO, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "zoo.cli", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=timeout)


def deep_tuple_key_pickle(depth: int = DEEP) -> bytes:
    """``{((((...()...),),): 1}``: a dict whose key is a tuple nested ``depth`` deep (2 MB)."""
    return b"\x80\x04}" + b")" + b"\x85" * depth + b"K\x01s."


def copy_release(name: str, destination: Path) -> Path:
    """A writable copy of a release folder, its weights linked rather than copied."""
    source = CHECKPOINTS / name
    for path in source.rglob("*"):
        target = destination / path.relative_to(source)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        elif path.suffix == ".safetensors":
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(path)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    return destination


def one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip() and "Warning" not in line and "warn(" not in line]
    assert len(lines) == 1, stderr
    return lines[0]


# ---------------------------------------------------------------------- code in a model folder
def plant_custom_tokenizer(folder: Path, marker: Path) -> None:
    """Make ``folder/tokenizer`` ask transformers for a tokenizer class shipped as Python code
    that, once imported, writes ``marker``."""
    tokenizer = folder / "tokenizer"
    (tokenizer / "hostile_tokenizer.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n"
        "from transformers import BertTokenizerFast\nclass HostileTokenizer(BertTokenizerFast):\n    pass\n")
    settings = json.loads((tokenizer / "tokenizer_config.json").read_text())
    settings["auto_map"] = {"AutoTokenizer": [None, "hostile_tokenizer.HostileTokenizer"]}
    settings["tokenizer_class"] = "HostileTokenizer"  # no class of transformers' own to fall back on
    (tokenizer / "tokenizer_config.json").write_text(json.dumps(settings))


@pytest.mark.slow
def test_a_folder_asking_for_custom_code_is_refused_on_a_terminal_without_a_prompt(tmp_path):
    pexpect = pytest.importorskip("pexpect")
    folder = copy_release("light-bi-ranker", tmp_path / "ranker")
    marker = tmp_path / "custom-code-ran"
    plant_custom_tokenizer(folder, marker)
    child = pexpect.spawn(sys.executable, ["-m", "zoo.cli", "eval", "light", "--model", str(folder),
                                           "--source", "fixture"],
                          env=zoo_env(Path(os.environ.get("ZOO_DATA_DIR", tmp_path))), cwd=str(REPO),
                          encoding="utf-8", timeout=240)
    index = child.expect(["y/N", pexpect.EOF])
    output = child.before or ""
    if index == 0:
        child.sendline("n")
        child.expect(pexpect.EOF)
    child.close()
    assert index == 1, f"transformers prompted to run the folder's code: {output}"
    lines = [line for line in output.splitlines() if line.strip() and "Warning" not in line and "warn(" not in line]
    assert len(lines) == 1 and "tokenizer_config.json" in lines[0] and "auto_map" in lines[0], output
    assert child.exitstatus not in (0, None)
    assert not marker.exists()


@pytest.mark.parametrize("relative, settings", [
    ("config.json", {"model_class": "BiRanker", "config": {"backbone_config": {"auto_map": {"AutoModel": "m.M"}}}}),
    ("tokenizer/tokenizer_config.json", {"tokenizer_class": "BertTokenizer", "trust_remote_code": True}),
    ("tokenizer/preprocessor_config.json", {"deep": [{"deeper": {"auto_map": {"AutoProcessor": "p.P"}}}]}),
    ("generation_config.json", {"custom_pipelines": {"text": {"impl": "pipe.Pipe"}}}),
    ("tokenizer/processor_config.json", {"processor_class": "hostile--proc.Processor"}),
])
def test_remote_code_in_any_settings_file_is_refused_naming_file_and_key(tmp_path, relative, settings):
    from zoo.grounded import Grounded
    from zoo.remote_code import RemoteCodeError

    folder = copy_release("light-bi-ranker", tmp_path / "ranker")
    path = folder / relative
    path.write_text(json.dumps(settings))
    with pytest.raises(RemoteCodeError) as error:
        Grounded.from_pretrained(folder)
    message = str(error.value)
    assert "\n" not in message and relative.split("/")[-1] in message
    assert any(key in message for key in ("auto_map", "trust_remote_code", "custom_pipelines", "processor_class"))


def test_python_files_in_a_model_folder_are_refused(tmp_path):
    from zoo.remote_code import RemoteCodeError, refuse_remote_code_in_folder

    folder = copy_release("light-ir", tmp_path / "ir")
    refuse_remote_code_in_folder(folder)  # the release itself is clean
    (folder / "modeling_hostile.py").write_text("raise SystemExit('ran')\n")
    with pytest.raises(RemoteCodeError, match="modeling_hostile.py"):
        refuse_remote_code_in_folder(folder)


def test_every_transformers_loading_call_in_zoo_refuses_remote_code_explicitly():
    import re

    calls = re.compile(r"(AutoTokenizer|AutoModel\w*|AutoConfig|EncoderDecoderModel)\.(from_pretrained|from_config|"
                       r"from_encoder_decoder_pretrained)\((?P<args>[^()]*(?:\([^()]*\)[^()]*)*)\)", re.S)
    seen = 0
    for path in [path for folder in ("zoo", "tools", "studies") for path in (REPO / folder).rglob("*.py")]:
        for match in calls.finditer(path.read_text()):
            seen += 1
            assert "trust_remote_code=False" in match["args"], f"{path}: {match[0]}"
    assert seen >= 6


# ---------------------------------------------------------------------- deep pickles
def test_a_deep_tuple_key_pickle_is_refused_by_stats_in_one_line(tmp_path):
    pickle_path = tmp_path / "deep.pkl"
    pickle_path.write_bytes(deep_tuple_key_pickle())
    result = run_zoo("light", "stats", "--pickle", str(pickle_path), "--no-verify", env=zoo_env(tmp_path))
    assert result.returncode not in (0, 139, -11), result
    line = one_line(result.stderr)
    assert "deep.pkl" in line and "256 levels" in line


@pytest.mark.slow
def test_a_deep_pickle_in_the_fixture_folder_is_refused_by_eval(tmp_path):
    from zoo.light.fixture import META, PICKLE

    fixture = tmp_path / "data" / "light" / "fixture"
    fixture.mkdir(parents=True)
    (fixture / PICKLE).write_bytes(deep_tuple_key_pickle())
    (fixture / META).write_text("[]")
    result = run_zoo("eval", "light", "--model", "random", "--source", "fixture", env=zoo_env(tmp_path / "data"))
    assert result.returncode not in (0, 139, -11), result
    line = one_line(result.stderr)
    assert PICKLE in line and "256 levels" in line


def test_appending_to_a_set_is_a_damaged_pickle_in_one_line():
    """EMPTY_SET then APPENDS: the unpickler's own AttributeError is a one-line refusal."""
    from zoo.light.safe_pickle import CorruptPickleError, loads_pickle

    with pytest.raises(CorruptPickleError, match=r"^x\.pkl: not a valid pickle .*'set' object has no attribute 'append'$"):
        loads_pickle(b"\x80\x04\x8f\x94(K\x01e.", source="x.pkl")


def test_pickle_scan_bounds_memo_tables_and_refuses_grown_containers():
    import pickle

    from zoo.light.safe_pickle import PickleLimitError, loads_pickle

    with pytest.raises(PickleLimitError, match="memo slot"):
        loads_pickle(b"\x80\x04]r\xff\xff\xff\x7f.")  # LONG_BINPUT 2**31-1 on a 9-byte stream
    grown = b"\x80\x04]\x94]\x94a\x94h\x01K\x01a."  # [[]] then the inner list grows
    with pytest.raises(PickleLimitError, match="after nesting"):
        loads_pickle(grown)
    nested: list = []
    for _ in range(200):
        nested = [nested, {"k": (1, "x")}]
    assert loads_pickle(pickle.dumps(nested, protocol=4)) == nested  # deep but within bounds
    wide = 0
    for _ in range(250):  # each level a full batch of 1000 items with the deeper one last
        wide = {**{f"k{j}": j for j in range(999)}, "z": wide}
    assert loads_pickle(pickle.dumps(wide, protocol=4)) == wide


@pytest.mark.slow
def test_deep_pickles_are_refused_without_reading_them_to_the_end():
    import time

    from zoo.light.safe_pickle import PickleLimitError, loads_pickle

    single_item_dicts = b"\x80\x04" + b"}\x94\x8c\x01k\x94" * DEEP + b"K\x01" + b"s" * DEEP + b"."
    open_marks = b"\x80\x04" + b"(" * DEEP + b"K\x01" + b"t" * DEEP + b"."
    for data in (single_item_dicts, open_marks):
        started = time.perf_counter()
        with pytest.raises(PickleLimitError, match="256 levels deep"):
            loads_pickle(data)
        assert time.perf_counter() - started < 10


# ---------------------------------------------------------------------- deep JSON
def test_a_deep_model_config_ends_in_one_line(tmp_path):
    from zoo.grounded import Grounded
    from zoo.safe_json import JsonError

    (tmp_path / "config.json").write_text('{"model_class": "RandomPolicy", "config": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(JsonError, match="nests 100001 levels deep") as error:
        Grounded.from_pretrained(tmp_path)
    assert "\n" not in str(error.value)


@pytest.mark.slow
@pytest.mark.parametrize("what", ["manifest", "blocks"])
def test_deep_json_ends_in_one_line(tmp_path, what):
    deep = "[" * 100_000 + "]" * 100_000
    env = zoo_env(tmp_path)
    if what == "manifest":
        (tmp_path / "manifest.json").write_text(deep)
        env["ZOO_MANIFEST"] = str(tmp_path / "manifest.json")
        args = ("models",)
    else:
        blocks = tmp_path / "blocks"
        blocks.mkdir()
        (blocks / "devset.json").write_text(deep)
        args = ("eval", "blocks", "--model", "random", "--split", "dev", "--data-dir", str(blocks))
    result = run_zoo(*args, env=env)
    assert result.returncode not in (0, 139, -11), result
    assert "RecursionError" not in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert "nests 100000 levels" in one_line(result.stderr)


def test_released_settings_are_within_the_json_depth_bound():
    from zoo.safe_json import MAX_JSON_DEPTH, json_depth

    for path in list(CHECKPOINTS.rglob("*.json")) + [REPO / "zoo" / "manifest.json"]:
        assert json_depth(path.read_text(encoding="utf-8")) <= MAX_JSON_DEPTH


# ---------------------------------------------------------------------- configs that add tensors
MEASURE = """
import resource, sys
from zoo.grounded import Grounded
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    Grounded.from_pretrained(sys.argv[1])
    print("loaded")
except ValueError as error:
    print("refused:", error)
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
"""


def grow_memnet(folder: Path) -> None:
    payload = json.loads((folder / "config.json").read_text())
    payload["config"]["layers"] = 1500
    (folder / "config.json").write_text(json.dumps(payload))


def repeat_members(folder: Path) -> None:
    payload = json.loads((folder / "config.json").read_text())
    members = payload["config"]["members"]
    payload["config"]["members"] = (members * 150)[:150]
    (folder / "config.json").write_text(json.dumps(payload))


@pytest.mark.slow
@pytest.mark.parametrize("release, change", [("light-memnet", grow_memnet), ("blocks-bandit-ensemble", repeat_members)])
def test_configs_adding_tensors_are_refused_before_allocating(tmp_path, release, change):
    folder = copy_release(release, tmp_path / release)
    change(folder)
    result = subprocess.run([sys.executable, "-c", MEASURE, str(folder)], capture_output=True, text=True,
                            env=zoo_env(tmp_path), cwd=REPO, timeout=300)
    assert result.returncode == 0, result.stderr
    outcome, growth = result.stdout.strip().splitlines()[-2:]
    assert outcome.startswith("refused:") and "\n" not in outcome
    assert int(growth) < 100, f"max RSS grew {growth} MiB before the refusal"  # built in full: 0.5-2.9 GB
