"""Shared fixtures. Real data is read through $ZOO_DATA_DIR; when it is unset, the shared
data next to the repository (../shared/data, as on CI) is used if it exists."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

# One intra-op thread: the tests' models are tiny, and on a shared 2-core machine extra OpenMP
# threads spin against other jobs and make small operations tens of times slower.
torch.set_num_threads(1)

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO.parent / "shared" / "data"


def _data_root() -> Path | None:
    root = os.environ.get("ZOO_DATA_DIR")
    if root:
        return Path(root)
    return SHARED_DATA if SHARED_DATA.is_dir() else None


DATA_ROOT = _data_root()
if DATA_ROOT is not None:
    os.environ.setdefault("ZOO_DATA_DIR", str(DATA_ROOT))

LIGHT_DATA = (DATA_ROOT or SHARED_DATA) / "light"
"""Where the LIGHT world, fixture and split indices are looked for."""

requires_real_blocks = pytest.mark.skipif(
    DATA_ROOT is None or not (DATA_ROOT / "blocks" / "devset.json").is_file(),
    reason="the real Blocks data is not available (set ZOO_DATA_DIR)",
)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Never read or write the user's real download cache from tests."""
    monkeypatch.setenv("ZOO_CACHE", str(tmp_path_factory.mktemp("zoo-cache")))
    monkeypatch.setenv("WANDB_MODE", "offline")


@pytest.fixture(scope="session")
def blocks_dev():
    """The real dev split; tests that take it are skipped where the data is absent."""
    from zoo.blocks.data import load_split

    if DATA_ROOT is None or not (DATA_ROOT / "blocks" / "devset.json").is_file():
        pytest.skip("the real Blocks data is not available (set ZOO_DATA_DIR)")
    return load_split("dev")


@pytest.fixture(scope="session")
def procedural_dev():
    from zoo.blocks.procedural import procedural_split

    return procedural_split("dev", transitions=24)


@pytest.fixture(scope="session")
def play_corpus(tmp_path_factory):
    """A tiny LIGHT-sim corpus on the authored world, for ``zoo play light`` to retrieve from."""
    from zoo.light.environment import authored_world
    from zoo.light.sim import SimConfig, generate_corpus, write_corpus

    world, config = authored_world(), SimConfig.preset("tiny", world="authored")
    return write_corpus(generate_corpus(config, world), tmp_path_factory.mktemp("play") / "corpus", config, world)


@pytest.fixture(scope="session")
def play_cache(tmp_path_factory):
    """One ``$ZOO_CACHE`` for the play tests, so the models are copied and the retrieval index
    built once for all of them (which start builds it is up to test order)."""
    return tmp_path_factory.mktemp("play-cache")
