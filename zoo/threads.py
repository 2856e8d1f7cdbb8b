"""How many intra-op threads torch uses for a piece of work, chosen by zoo and said out loud.

torch takes every core by default, and a thread sharing its core with another process stalls
the others at every operation: on a 2-core AMD EPYC with both cores busy, 300 dev episodes of
``zoo eval blocks`` took 14.4 s on two threads and 9.1 s on one, while on the idle machine two
threads took 3.7 s and one 5.9 s (``benchmarks/threads.py``). So zoo counts the cores other
processes leave idle when the work starts:

- ``large`` work (batched: Blocks evaluation and training, LIGHT's encoders) runs on the idle
  cores (a short sample of the CPU's use, at least one);
- ``small`` work (one board or one line at a time: play, rendering one episode) runs on one
  thread, which its operations are too small to share;
- an explicit request wins: ``threads=N`` in a recipe, ``--threads N`` on a command, or
  ``OMP_NUM_THREADS`` in the environment (whoever set it meant it).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

WORK_KINDS = ("small", "large")


@dataclass(frozen=True)
class ThreadChoice:
    """The thread count chosen for a piece of work, and why (for the plan line)."""

    threads: int
    why: str

    def __str__(self) -> str:
        return f"{self.threads} thread{'s' if self.threads != 1 else ''} ({self.why})"


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


def choose_threads(work: str, requested: int | None = None) -> ThreadChoice:
    """The thread count for ``work`` (one of :data:`WORK_KINDS`); see the module's text."""
    if work not in WORK_KINDS:
        raise ValueError(f"work must be one of {', '.join(WORK_KINDS)}; got {work!r}")
    if requested is not None:
        if int(requested) < 1:
            raise ValueError(f"threads must be at least 1; got {requested}")
        return ThreadChoice(int(requested), "as asked")
    environment = os.environ.get("OMP_NUM_THREADS", "").strip()
    if environment.isdigit() and int(environment) >= 1:
        return ThreadChoice(int(environment), "OMP_NUM_THREADS")
    if work == "small":
        return ThreadChoice(1, "small operations; threads=N to change")
    return ThreadChoice(idle_cores(), f"the idle cores of {machine_cores()}; threads=N to change")


_chosen: ThreadChoice | None = None


def use_threads(work: str, requested: int | None = None) -> ThreadChoice:
    """Choose the thread count for ``work`` and give it to torch; the choice is kept for
    :func:`current_choice` (the training plan line reports it)."""
    import torch

    global _chosen
    _chosen = choose_threads(work, requested)
    torch.set_num_threads(_chosen.threads)
    return _chosen


def current_choice() -> ThreadChoice:
    """The last choice :func:`use_threads` made, or torch's own count when zoo made none."""
    import torch

    return _chosen if _chosen is not None else ThreadChoice(torch.get_num_threads(), "torch's default")
