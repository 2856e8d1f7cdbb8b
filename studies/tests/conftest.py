"""The studies' tests: run them with ``python -m pytest studies/tests`` (the default suite,
``testpaths = ["tests"]``, covers the library only). They import a study as a module through
``study_support.load_study`` and use the library suite's helpers and fixtures under ``tests/``."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # ``tests.*`` importable from any working directory
    sys.path.insert(0, str(REPO))

# The library suite's setup: one torch thread, $ZOO_DATA_DIR, a throw-away download cache.
from tests.conftest import _isolated_cache  # noqa: E402, F401
