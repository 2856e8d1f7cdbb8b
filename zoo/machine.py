"""What this machine offers a run: its accelerators, its free memory, and whether a launcher
started this process as one of a multi-node job.

The recipe schema (:mod:`zoo.recipe_schema`) asks these before any work, so that a setting
this machine cannot honour stops with one line instead of failing later: an accelerator
whose library is missing (``ModuleNotFoundError`` deep in Lightning), a replay larger than
the memory (a ``RuntimeError`` at its first allocation), or ``num_nodes=2`` started by hand
on one machine (DDP waits for the other node's processes, which never come). Each question
is answered the way Lightning itself answers it when the Trainer starts, so both agree.
"""

from __future__ import annotations

import os
import warnings

MULTI_NODE_VARIABLES = ("MASTER_ADDR", "NODE_RANK", "WORLD_SIZE")
"""What a hand-started multi-node job sets on every node (Lightning's ``LightningEnvironment``
reads them; ``MASTER_PORT`` has a default)."""


def cluster_environment() -> str | None:
    """The name of the cluster environment that launched this process (torchelastic/torchrun,
    SLURM's srun, LSF's jsrun, MPI), found by the ``detect()`` of each environment Lightning's
    Trainer tries, in its order; None when none did (a plain ``python`` or ``zoo`` command).
    Such a launcher places the ranks itself: each one may see only its own devices."""
    from lightning.fabric.plugins.environments import (
        LSFEnvironment,
        MPIEnvironment,
        SLURMEnvironment,
        TorchElasticEnvironment,
    )

    with warnings.catch_warnings():  # SLURM's detect() warns when srun exists but this process is not under it
        warnings.simplefilter("ignore")
        for environment in (TorchElasticEnvironment, SLURMEnvironment, LSFEnvironment, MPIEnvironment):
            if environment.detect():
                return environment.__name__.removesuffix("Environment")
    return None


def machine_devices(accelerator: str) -> tuple[str, int] | None:
    """(what a device is, how many this machine has) for ``accelerator``; None when zoo cannot
    count them (TPUs; or ranks placed by SLURM or torchrun, which may each see only their own
    GPU), which Lightning then checks itself."""
    import torch

    if cluster_environment() is not None:
        return None
    gpus = torch.cuda.device_count()
    if accelerator in ("gpu", "cuda") or accelerator == "auto" and gpus:
        return "GPU", gpus
    if accelerator == "mps" or accelerator == "auto" and torch.backends.mps.is_available():
        return "MPS device", int(torch.backends.mps.is_available())
    if accelerator in ("cpu", "auto"):
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        return "CPU", cpus
    return None


def multi_node_launch() -> str | None:
    """How this process was started as one node of several, or None: a cluster environment
    (:func:`cluster_environment`), or the variables of a job started by hand on each node
    (:data:`MULTI_NODE_VARIABLES`)."""
    found = cluster_environment()
    if found:
        return found
    if all(os.environ.get(name) for name in MULTI_NODE_VARIABLES):
        return "+".join(MULTI_NODE_VARIABLES)
    return None


def available_accelerators() -> tuple[str, ...]:
    """The ``trainer.accelerator`` values this machine can run: ``auto``, each accelerator in
    Lightning's ``AcceleratorRegistry`` whose ``is_available()`` says so, and ``gpu`` (Lightning's
    name for CUDA or MPS) when either is."""
    from lightning.pytorch.accelerators import AcceleratorRegistry

    names = sorted(name for name in AcceleratorRegistry.available_accelerators()
                   if _accelerator_available(AcceleratorRegistry[name]["accelerator"]))
    gpu = ("gpu",) if {"cuda", "mps"} & set(names) else ()
    return ("auto", *names, *gpu)


def _accelerator_available(accelerator) -> bool:
    """``is_available()``, counting an accelerator whose check itself fails (a half-installed
    library) as absent."""
    try:
        return bool(accelerator.is_available())
    except Exception:  # noqa: BLE001 - any failure of the probe means "not here"
        return False


def available_memory() -> int | None:
    """Bytes of memory a new allocation can have now without swapping: the kernel's
    ``MemAvailable``, at most what this process's cgroup still allows; ``os.sysconf``'s free
    pages where there is no ``/proc``; None when neither says."""
    found = _meminfo_available()
    if found is None:
        try:
            found = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (AttributeError, OSError, ValueError):
            return None
    limit = _cgroup_room()
    return min(found, limit) if limit is not None else found


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo.read(65536).splitlines():
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_room() -> int | None:
    """What the cgroup v2 memory limit leaves (``memory.max`` less ``memory.current``), if any."""
    try:
        with open("/sys/fs/cgroup/memory.max", encoding="ascii") as limit_file:
            limit = limit_file.read(64).strip()
        if limit == "max":
            return None
        with open("/sys/fs/cgroup/memory.current", encoding="ascii") as current_file:
            return max(int(limit) - int(current_file.read(64).strip()), 0)
    except (OSError, ValueError):
        return None


def format_bytes(count: float) -> str:
    """``count`` bytes in decimal units, three significant digits: ``43.2 kB``, ``8.64 TB``."""
    if abs(count) < 1000:
        return f"{int(count)} B"
    for unit in ("kB", "MB", "GB", "TB", "PB"):
        count /= 1000
        if abs(count) < 1000 or unit == "PB":
            return f"{count:.3g} {unit}"
