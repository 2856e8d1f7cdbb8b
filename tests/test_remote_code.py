"""The remote-code scan of a model folder reads bounded bytes, whatever the folder holds."""

from __future__ import annotations

import json
import time
import tracemalloc

import pytest

from zoo.remote_code import MAX_SETTINGS_FILE_BYTES, RemoteCodeError, refuse_remote_code_in_folder


def write_json_of_size(path, size: int, **settings) -> None:
    """A valid JSON object of ``size`` bytes: ``settings`` plus one long padding string."""
    head = json.dumps({**settings, "padding": ""})[:-2]
    path.write_text(head + "x" * (size - len(head) - 2) + '"}')
    assert path.stat().st_size == size


def test_an_oversized_tokenizer_config_is_refused_in_one_line_without_being_read(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    write_json_of_size(folder / "tokenizer_config.json", 64 << 20, tokenizer_class="BertTokenizer")
    tracemalloc.start()
    started = time.monotonic()
    try:
        with pytest.raises(RemoteCodeError) as refused:
            refuse_remote_code_in_folder(folder)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(refused.value)
    assert "tokenizer_config.json" in message and "4 MiB" in message and "\n" not in message
    assert time.monotonic() - started < 2 and peak < 4 * MAX_SETTINGS_FILE_BYTES


def test_settings_files_up_to_the_cap_are_still_checked(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    write_json_of_size(folder / "config.json", MAX_SETTINGS_FILE_BYTES, auto_map={"AutoModel": "m.M"})
    with pytest.raises(RemoteCodeError, match="auto_map"):
        refuse_remote_code_in_folder(folder)


def test_a_large_tokenizer_json_is_not_parsed_and_a_small_one_is(tmp_path):
    """A large model's tokenizer.json is tens of MB and transformers takes no code-asking key
    from it: the scan passes it unread. A small one is checked like every other JSON file."""
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"architectures": ["BertModel"]}))
    write_json_of_size(folder / "tokenizer.json", MAX_SETTINGS_FILE_BYTES + 1, version="1.0")
    refuse_remote_code_in_folder(folder)
    (folder / "tokenizer.json").write_text(json.dumps({"auto_map": {"AutoTokenizer": ["t.T", None]}}))
    with pytest.raises(RemoteCodeError, match="tokenizer.json"):
        refuse_remote_code_in_folder(folder)
