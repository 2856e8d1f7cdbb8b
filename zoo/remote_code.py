"""Refusing model folders that ask transformers to run code shipped with them.

transformers imports Python files from a model folder when a settings file names them: an
``auto_map`` in ``config.json``, ``tokenizer_config.json``, ``preprocessor_config.json``,
``processor_config.json`` or ``generation_config.json`` (at any depth of the JSON), or a
``custom_pipelines`` entry. Asked interactively it even prompts "Do you wish to run the custom
code? [y/N]" on a terminal, so one keystroke would run a file's code. zoo never runs such
code: every folder it hands to transformers (a checkpoint, its ``tokenizer/``, a backbone, a
speech model) goes through :func:`refuse_remote_code_in_folder` first, and every transformers
call passes ``trust_remote_code=False`` as a second line of defence.

This module depends on :mod:`zoo.safe_json` only, so anything may import it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from zoo.errors import ZooError
from zoo.safe_json import read_json

REMOTE_CODE_KEYS = ("auto_map", "custom_pipelines", "trust_remote_code")
"""Settings keys with which a folder asks transformers to import its own code."""

CLASS_NAME_KEYS = ("tokenizer_class", "processor_class", "image_processor_type", "feature_extractor_type",
                   "video_processor_type", "architectures")
"""Keys naming a class: a value with a module path (``pkg.Class``, ``repo--module.Class``)
names code outside transformers."""

MAX_SETTINGS_FILES = 10_000
MAX_SETTINGS_BYTES = 512 * 1024 * 1024
"""Bounds on the scan of one folder: a folder over these is refused rather than read."""


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
    A path that is not a directory (a hub name, a single weights file) is left to the caller."""
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
            total += path.stat().st_size
            if seen > MAX_SETTINGS_FILES or total > MAX_SETTINGS_BYTES:
                raise RemoteCodeError(f"{root} holds more settings files than zoo checks "
                                      f"({MAX_SETTINGS_FILES} files, {MAX_SETTINGS_BYTES} bytes); refused")
            refuse_remote_code(read_json(path), path)
    if code:  # after the settings, so a refusal names the file and key that ask for the code
        raise RemoteCodeError(f"{code[0]} is Python code shipped with the model; zoo never runs it")
