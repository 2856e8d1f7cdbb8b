"""How a big set of texts is encoded once on a CPU (every training utterance, for retrieval):
on the machine's idle cores, and with bfloat16 matrix products where the CPU computes them
natively (AVX512-BF16 or AMX), which does the same work in about half the CPU time. The
embeddings stay within a cosine of 0.999 of float32's (``tests/test_bulk_encoding.py``).
Cores other processes keep busy are left out: torch's threads wait for each other at every
operation, so a thread sharing its core stalls them all (on a 2-core machine with a load of
10, two threads took three times the CPU seconds of one). An explicit ``OMP_NUM_THREADS`` is
respected (whoever set it meant it)."""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator
from pathlib import Path

import torch

from zoo.threads import idle_cores

BF16_FLAGS = ("avx512_bf16", "amx_bf16")


@functools.lru_cache(maxsize=1)
def cpu_has_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 natively (Linux's ``/proc/cpuinfo`` flags; elsewhere
    False, and encoding stays float32, which emulated bfloat16 would only slow down)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    flags = {flag for line in text.splitlines() if line.startswith("flags") for flag in line.split(":", 1)[1].split()}
    return any(flag in flags for flag in BF16_FLAGS)


@contextlib.contextmanager
def bulk_encoding(device: torch.device) -> Iterator[None]:
    """Inside: the settings above on a CPU (nothing changes on a GPU); torch's thread count is
    restored on the way out."""
    if torch.device(device).type != "cpu":
        yield
        return
    threads = torch.get_num_threads()
    if not os.environ.get("OMP_NUM_THREADS"):
        torch.set_num_threads(idle_cores())
    try:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=cpu_has_bf16()):
            yield
    finally:
        torch.set_num_threads(threads)
