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
import time
from collections.abc import Iterator
from pathlib import Path

import torch

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


def machine_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def busy_fraction(seconds: float = 0.2) -> float | None:
    """The share of the machine's CPU time other processes used over ``seconds`` while this
    one slept (Linux's ``/proc/stat``), or None where it cannot be read.

    Sampled now rather than read from the load average: the one-minute load counts this
    process's own work just before (loading models keeps a core busy), so on an idle 2-core
    machine it reads about 1 and would leave a free core out."""
    def sample() -> tuple[int, int]:
        fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        return sum(fields[:8]), idle

    try:
        total_before, idle_before = sample()
        time.sleep(seconds)
        total_after, idle_after = sample()
    except (OSError, ValueError, IndexError):
        return None
    elapsed = total_after - total_before
    return None if elapsed <= 0 else 1.0 - (idle_after - idle_before) / elapsed


def idle_cores() -> int:
    """The cores other processes leave idle now (at least one): a short sample of the CPU's
    use, or where the system gives none, the one-minute load average."""
    cores = machine_cores()
    busy = busy_fraction()
    if busy is not None:
        taken = busy * cores
    else:
        try:
            taken = os.getloadavg()[0]
        except (AttributeError, OSError):  # no load average either: assume the machine is ours
            taken = 0.0
    return max(1, min(cores, round(cores - taken)))


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
