"""Shared by the studies' tests: import a script under studies/ as a module by its file name."""

from __future__ import annotations

import importlib.util
from pathlib import Path

STUDIES = Path(__file__).resolve().parents[1]


def load_study(name: str):
    """``studies/<name>.py`` as a module (the studies are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(name, STUDIES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
