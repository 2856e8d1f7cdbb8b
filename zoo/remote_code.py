"""Refusing model folders that ask transformers to run code shipped with them.

transformers imports Python files from a model folder when a settings file names them: an
``auto_map`` in ``config.json``, ``tokenizer_config.json``, ``preprocessor_config.json``,
``processor_config.json`` or ``generation_config.json`` (at any depth of the JSON), or a
``custom_pipelines`` entry. Asked interactively it even prompts "Do you wish to run the custom
code? [y/N]" on a terminal, so one keystroke would run a file's code. zoo never runs such
code: every folder it hands to transformers (a checkpoint, its ``tokenizer/``, a backbone, a
speech model) goes through :func:`refuse_remote_code_in_folder` first, and every transformers
call passes ``trust_remote_code=False`` as a second line of defence.

The scan costs little whatever the folder holds: it reads a bounded number of bytes per file and
in all (:data:`MAX_SETTINGS_FILE_BYTES`, :data:`MAX_SETTINGS_BYTES`), because parsing JSON takes
about eight times the file's size in memory, and an unbounded read let one 500 MB
``tokenizer_config.json`` hold the scan for over a minute.

This module depends on :mod:`zoo.safe_json` only, so anything may import it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from zoo.errors import ZooError
from zoo.safe_json import JsonError, loads_json

REMOTE_CODE_KEYS = ("auto_map", "custom_pipelines", "trust_remote_code")
"""Settings keys with which a folder asks transformers to import its own code."""

CLASS_NAME_KEYS = ("tokenizer_class", "processor_class", "image_processor_type", "feature_extractor_type",
                   "video_processor_type", "architectures")
"""Keys naming a class: a value with a module path (``pkg.Class``, ``repo--module.Class``)
names code outside transformers."""

SETTINGS_SUFFIX = "config.json"
"""Every file transformers reads code-asking keys from ends so: ``config.json``,
``tokenizer_config.json``, ``preprocessor_config.json``, ``processor_config.json``,
``video_preprocessor_config.json``, ``generation_config.json``."""

MAX_SETTINGS_FILE_BYTES = 4 * 1024 * 1024
"""The largest settings file the scan reads (4 MiB); a larger one is refused before it is read.
Real ones are kilobytes: a ``tokenizer_config.json`` listing hundreds of added tokens is about
100 KB, a ``config.json`` naming the 21,841 ImageNet-22k labels about 1 MB. Other JSON files
(``tokenizer.json``, ``vocab.json``, weight maps) are read up to the same size; beyond it they
are counted but not read, since transformers takes no code-asking key from them and a large
model's ``tokenizer.json`` is tens of MB."""

MAX_SETTINGS_FILES = 10_000
MAX_SETTINGS_BYTES = 64 * 1024 * 1024
"""Bounds on the scan of one folder (JSON files seen, bytes read): a folder over these is
refused rather than read."""


class RemoteCodeError(ZooError, ValueError):
    """A model folder asks to run code shipped with it; zoo never does."""


def refuse_remote_code(config: Any, where: str | os.PathLike) -> None:
    """Refuse, in one line naming ``where`` and the key, settings that would make
    transformers import code shipped with a model. Walks nested dicts and lists without
    recursion, so a deep value cannot overflow the stack."""
    pending = [config]
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            for key, inner in value.items():
                if key in REMOTE_CODE_KEYS and inner:
                    raise RemoteCodeError(f"{where} asks to run code shipped with the model ({key}); zoo never does")
                if key in CLASS_NAME_KEYS and _names_module(inner):
                    raise RemoteCodeError(f"{where} names a class outside transformers ({key}: {inner!r}); "
                                          "zoo never runs code shipped with a model")
                pending.append(inner)
        elif isinstance(value, list):
            pending.extend(value)


def _names_module(value: Any) -> bool:
    names = value if isinstance(value, list) else [value]
    return any(isinstance(name, str) and ("." in name or "--" in name) for name in names)


def refuse_remote_code_in_folder(directory: str | os.PathLike) -> None:
    """Check every settings file (``*.json``) under ``directory``, at any depth, and refuse a
    folder that ships Python files: nothing in it may ask transformers for custom code.
    A path that is not a directory (a hub name, a single weights file) is left to the caller.
    Every read is bounded (see :data:`MAX_SETTINGS_FILE_BYTES`), so the scan stays cheap."""
    root = Path(directory)
    if not root.is_dir():
        return
    seen, total, code = 0, 0, []
    for folder, subfolders, files in os.walk(root, followlinks=False):
        subfolders.sort()
        for name in sorted(files):
            path = Path(folder) / name
            if name.endswith(".py"):
                code.append(path)
            if not name.endswith(".json") or not path.is_file():
                continue
            seen += 1
            size = path.stat().st_size
            if size > MAX_SETTINGS_FILE_BYTES and not name.endswith(SETTINGS_SUFFIX):
                continue  # a vocabulary or tokenizer.json: transformers takes no code-asking key from it
            total += min(size, MAX_SETTINGS_FILE_BYTES)
            if seen > MAX_SETTINGS_FILES or total > MAX_SETTINGS_BYTES:
                raise RemoteCodeError(f"{root} holds more settings files than zoo checks "
                                      f"({MAX_SETTINGS_FILES} files, {MAX_SETTINGS_BYTES} bytes); refused")
            refuse_remote_code(_read_settings(path), path)
    if code:  # after the settings, so a refusal names the file and key that ask for the code
        raise RemoteCodeError(f"{code[0]} is Python code shipped with the model; zoo never runs it")


def _read_settings(path: Path) -> Any:
    """The JSON at ``path``, reading at most :data:`MAX_SETTINGS_FILE_BYTES` + 1 bytes: a file
    that is larger (or grew since it was listed) is refused without being read further."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_SETTINGS_FILE_BYTES + 1)
    except OSError as error:
        raise JsonError(f"cannot read {path}: {error.strerror or error}") from None
    if len(data) > MAX_SETTINGS_FILE_BYTES:
        raise RemoteCodeError(f"{path} is over the {MAX_SETTINGS_FILE_BYTES >> 20} MiB zoo reads of a settings file "
                              "(real ones are kilobytes); refused: replace it with the model's own")
    return loads_json(data, str(path))
