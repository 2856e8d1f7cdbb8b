"""A run directory's identity: which configuration it holds, and who is writing it now.

``config.yaml`` is the run's identity. It is written once, first (atomically), into a new or
empty directory or one zoo marked as a run (:data:`zoo.safe_writes.MARKER_NAME`, kind ``"run"``),
and never rewritten. A rerun with the same configuration resumes the run; a rerun with
another one is refused in one line before anything is written, naming each key that differs,
unless every differing key is in :data:`SAFE_TO_CHANGE` and named in
``resume.allow_changed`` (the change is then recorded in ``changes.jsonl`` and in the leg
that made it, and ``config.yaml`` keeps the original).

One process at a time writes a run directory: :meth:`RunDirectory.open` takes a lock file
inside it and records its holder (pid, host, start time) beside it, so a second process is
refused with the holder's name instead of racing the first one's checkpoints.

``run_dir`` itself and the ``resume`` section are not part of the identity: a run folder may
be moved and resumed from its new place, and how a rerun asks to go on says nothing about
what the run is.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import socket
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from zoo.errors import UnsafeDestinationError, ZooError

log = logging.getLogger(__name__)

CONFIG_NAME = "config.yaml"
CHANGES_NAME = "changes.jsonl"
LOCK_NAME = ".zoo-run.lock"
HOLDER_NAME = ".zoo-run.holder.json"
RUN_KIND = "run"
NOT_IDENTITY = ("run_dir", "resume")
"""Top-level keys that say where a run is and how a rerun goes on, not what the run is."""

SAFE_TO_CHANGE: dict[str, str] = {
    "trainer.max_epochs": "where training stops, not what a step computes: a longer schedule continues the same optimisation",
    "trainer.max_steps": "where the objective's training stops (as trainer.max_epochs); the Blocks warm-up trains "
                         "start.warmup_epochs whatever it says",
    "trainer.max_time": "where the objective's training stops (as trainer.max_steps)",
    "threads": "torch's intra-op thread count: how fast a step runs, not what it computes",
    "logger.kind": "where metrics are reported, not what is trained",
    "logger.project": "where metrics are reported",
    "logger.mode": "whether W&B syncs, not what is trained",
    "checkpoint.every_n_train_steps": "how often last.ckpt is written; every checkpoint resumes to the same weights",
    "trainer.enable_progress_bar": "console output only",
    "trainer.enable_model_summary": "console output only",
    "trainer.log_every_n_steps": "how often metrics are logged, not what is trained",
    "evaluation.gifs": "how many rollout GIFs are drawn; no weight depends on them",
    "test": "whether the best epoch is tested after training; training is unchanged",
    "export": "whether the best epoch is exported after training; training is unchanged",
}
"""Keys a resumed run may change (with ``resume.allow_changed=[key,...]``), each with why it
cannot change what the run already computed. Anything else (sizes, data, learning rates,
seeds, devices and strategy, batch sizes) would make the resumed run a mix of two runs."""


class RunDirectoryError(ZooError, ValueError):
    """A run directory zoo cannot use for this run; the message says how to go on."""


class ConfigChangedError(RunDirectoryError):
    """The run directory holds a run with another configuration."""


class RunInUseError(RunDirectoryError):
    """Another process holds the run directory."""


class StageMismatchError(RunDirectoryError):
    """A stage of the run (e.g. the Blocks warm-up) was made from another configuration."""


def identity(config) -> dict[str, Any]:
    """The configuration as plain data, less the keys that are not the run's identity."""
    from omegaconf import DictConfig, OmegaConf

    data = OmegaConf.to_container(config, resolve=True) if isinstance(config, DictConfig) else dict(config)
    return {key: value for key, value in data.items() if key not in NOT_IDENTITY}


def flatten(data: Mapping, prefix: str = "") -> dict[str, Any]:
    """Dotted key -> leaf value (mappings recurse; lists are leaves)."""
    leaves: dict[str, Any] = {}
    for key, value in data.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            leaves.update(flatten(value, path + "."))
        else:
            leaves[path] = value
    return leaves


def config_sha256(data: Mapping) -> str:
    """sha256 of a configuration's canonical JSON (keys sorted): equal configs, equal hashes."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def stage_sha256(data: Mapping, excluded: tuple[str, ...]) -> str:
    """The hash of the part of a configuration that determines one stage of a run: every leaf
    but those under the ``excluded`` dotted prefixes (and the keys safe to change)."""
    leaves = flatten(data)
    kept = {key: value for key, value in leaves.items()
            if key not in SAFE_TO_CHANGE and not any(key == ex or key.startswith(ex + ".") for ex in excluded)}
    return config_sha256(kept)


@dataclass(frozen=True)
class Change:
    key: str
    old: Any
    new: Any

    def __str__(self) -> str:
        return f"{self.key}: {_show(self.old)} -> {_show(self.new)}"


_ABSENT = "<absent>"


def _show(value: Any) -> str:
    return value if value == _ABSENT else json.dumps(value, default=str)


def differences(old: Mapping, new: Mapping) -> list[Change]:
    """Every dotted key whose value differs between two configurations, sorted."""
    before, after = flatten(old), flatten(new)
    return [Change(key, before.get(key, _ABSENT), after.get(key, _ABSENT))
            for key in sorted(set(before) | set(after)) if before.get(key, _ABSENT) != after.get(key, _ABSENT)]


def apply_changes(data: dict, changes) -> dict:
    """``data`` with the recorded changes applied in order (the configuration a run has now)."""
    import copy

    data = copy.deepcopy(data)
    for change in changes:
        parts = change["key"].split(".")
        node = data
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        if change["new"] == _ABSENT:
            node.pop(parts[-1], None)
        else:
            node[parts[-1]] = change["new"]
    return data


def refusal(run_dir: Path, refused: list[Change]) -> str:
    """The one line that refuses a rerun with another configuration, and how to go on."""
    listed = "; ".join(str(change) for change in refused)
    safe = [change.key for change in refused if change.key in SAFE_TO_CHANGE]
    how = "use a new run_dir"
    if len(safe) == len(refused):
        how += f", or resume.allow_changed=[{','.join(safe)}] to continue it with the change"
    elif safe:
        how += f" (of these only {', '.join(safe)} may change in a resumed run, with resume.allow_changed)"
    return f"run_dir {str(run_dir)!r} holds a run with another configuration ({listed}); {how}"


WORK_FILES = ("checkpoints", "warmup", "pretrained", "results.json")
"""What a run makes from its configuration: while none exists (a run that stopped on a bad
setting before training), another configuration may take the directory."""

STAGE_KIND = "stage"
"""The marker kind of a stage inside a run (the Blocks warm-up): part of a run, never one."""

WRITTEN_IN_RUN = (*WORK_FILES, CONFIG_NAME, CHANGES_NAME, "metrics.jsonl", "warmup/checkpoints", "warmup/pretrained")
"""Entries of a run directory (and its stage) that zoo writes into or replaces: none may be a
link, which would send zoo's writes and deletions into someone else's folder."""


def _has_work(run_dir: Path) -> bool:
    return any((run_dir / name).exists() for name in WORK_FILES)


def _check_usable(run_dir: Path) -> None:
    from zoo.safe_writes import check_replaceable, marker_record

    if run_dir.is_symlink() or run_dir.exists() and not run_dir.is_dir():
        raise RunDirectoryError(f"run_dir {str(run_dir)!r} exists and is not a directory (or is a link); "
                                "choose a new or empty directory")
    record = marker_record(run_dir)
    if record.get("kind") == STAGE_KIND or record.get("kind") == RUN_KIND and "config_sha256" in record:
        # a stage (older zoo marked its warm-up kind "run", with the run's stage hash)
        raise RunDirectoryError(f"run_dir {str(run_dir)!r} is a stage inside another run (its warm-up), not a run; "
                                "choose a new or empty directory")
    try:
        check_replaceable(run_dir, kind=RUN_KIND)
    except UnsafeDestinationError as error:
        raise RunDirectoryError(f"run_dir: {error}") from None
    for name in WRITTEN_IN_RUN:
        if (run_dir / name).is_symlink():
            raise RunDirectoryError(f"run_dir: {str(run_dir / name)!r} is a link, and zoo writes and deletes there; "
                                    "zoo never makes one: remove the link or use a new run_dir")


@dataclass
class RunDirectory:
    """A run directory opened for one process: its identity and, on rank 0, its lock."""

    path: Path
    identity: dict
    sha256: str
    changes: list[Change] = field(default_factory=list)
    """Keys this process changed from the run's configuration (allowed with resume.allow_changed)."""
    writer: bool = True
    _lock: Any = None
    settings_sha256: str = ""
    """The hash of the configuration in force now: the identity with every recorded change applied
    (``changes.jsonl``). A run's results carry it, so a rerun can tell a finished run from one
    whose extension was cut short (:meth:`finished_results`)."""

    @classmethod
    def open(cls, config, rank: int = 0) -> "RunDirectory":
        """Check that ``config.run_dir`` may hold this run and take it (see the module's text).

        ``rank`` > 0 (a DDP worker, launched through the same script) only reads: rank 0
        holds the lock and writes, and the worker must not wait on rank 0's lock."""
        run_dir = config.get("run_dir")
        if run_dir is None or not str(run_dir).strip():
            raise RunDirectoryError("run_dir is empty; give the run a directory, e.g. run_dir=runs/my-run")
        run_dir = Path(str(run_dir)).expanduser()
        wanted = identity(config)
        allowed = list((config.get("resume") or {}).get("allow_changed") or [])
        unsafe = [key for key in allowed if key not in SAFE_TO_CHANGE]
        if unsafe:
            raise RunDirectoryError(f"resume.allow_changed: {', '.join(unsafe)} cannot change in a resumed run "
                                    f"(keys that can: {', '.join(sorted(SAFE_TO_CHANGE))}); use a new run_dir")
        if rank > 0:
            return cls._read_only(run_dir, wanted)
        _check_usable(run_dir)
        if run_dir.is_dir():  # a refusal writes nothing, not even the marker or the lock file
            try:
                cls._compare(run_dir, wanted, set(allowed))
            except ConfigChangedError:
                refuse_if_in_use(run_dir)  # a process writing the run now is the better reason to give
                raise
        from zoo.safe_writes import MARKER_NAME, write_marker

        try:
            run_dir.mkdir(parents=True, exist_ok=True)
            if not (run_dir / MARKER_NAME).exists():
                write_marker(run_dir, kind=RUN_KIND)
            lock = acquire(run_dir)
        except OSError as error:  # a read-only filesystem, a permission: one line before any work
            raise RunDirectoryError(f"cannot write to run_dir {str(run_dir)!r}: {error.strerror or error}; "
                                    "make it writable or use a new run_dir") from None
        try:
            opened = cls._take(run_dir, wanted, set(allowed), lock)
            opened.settings_sha256 = config_sha256(apply_changes(opened.identity, read_changes(run_dir)))
        except BaseException:
            lock.release()
            raise
        return opened

    @classmethod
    def _read_only(cls, run_dir: Path, wanted: dict) -> "RunDirectory":
        original = read_identity(run_dir)
        original = wanted if original is None else original
        return cls(run_dir, original, config_sha256(original), writer=False,
                   settings_sha256=config_sha256(apply_changes(original, read_changes(run_dir))))

    @classmethod
    def _take(cls, run_dir: Path, wanted: dict, allowed: set[str], lock) -> "RunDirectory":
        remove_staging_leftovers(run_dir)
        original = read_identity(run_dir)
        if original is None or not _has_work(run_dir):  # nothing made from the old config: nothing to mix
            if original != wanted:
                write_identity(run_dir, wanted)
                (run_dir / CHANGES_NAME).unlink(missing_ok=True)
            return cls(run_dir, wanted, config_sha256(wanted), _lock=lock)
        changed = cls._compare(run_dir, wanted, allowed, original)  # again, now under the lock
        if changed:
            record_changes(run_dir, changed)
        return cls(run_dir, original, config_sha256(original), changed, _lock=lock)

    @staticmethod
    def _compare(run_dir: Path, wanted: dict, allowed: set[str], original: dict | None = None) -> list[Change]:
        """The changes from the run's configuration to ``wanted``; ConfigChangedError if any is
        not allowed. A directory holding no run yet, or nothing made from it, has none."""
        original = read_identity(run_dir) if original is None else original
        if original is None or not _has_work(run_dir):
            return []
        changed = differences(apply_changes(original, read_changes(run_dir)), wanted)
        refused = [change for change in changed if change.key not in allowed]
        if refused:
            raise ConfigChangedError(refusal(run_dir, refused))
        return changed

    def close(self) -> None:
        """Let the next process have the run directory. The holder's record goes first: one
        left behind under a free lock says its process ended without closing (killed)."""
        if self._lock is not None:
            (self.path / HOLDER_NAME).unlink(missing_ok=True)
            self._lock.release()
            self._lock = None

    def __enter__(self) -> "RunDirectory":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def record(self) -> dict:
        """What a file this run writes keeps of where it came from."""
        return {"config_sha256": self.sha256}

    def results_record(self) -> dict:
        """What ``results.json`` keeps of where it came from: the run and the settings it finished under."""
        return {"config_sha256": self.sha256, "settings_sha256": self.settings_sha256}

    def finished_results(self) -> dict | None:
        """The run's ``results.json`` when the run finished under the settings in force now and
        this process changed none of them: a rerun then has nothing to train, test or export,
        and can say so before loading any data. None otherwise."""
        if self.changes or not (self.path / "checkpoints" / "last.ckpt").is_file():  # the state it finished in
            return None
        try:
            results = json.loads((self.path / "results.json").read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(results, dict):
            return None
        same = results.get("config_sha256") == self.sha256 and results.get("settings_sha256") == self.settings_sha256
        return results if same else None

    def made_here(self, directory: Path, sha256: str | None = None) -> bool:
        """Whether ``directory`` (an export, a stage) was written by this configuration."""
        from zoo.safe_writes import marker_record

        return marker_record(directory).get("config_sha256") == (sha256 or self.sha256)


def read_identity(run_dir: Path) -> dict | None:
    from omegaconf import OmegaConf

    path = run_dir / CONFIG_NAME
    if not path.is_file():
        return None
    try:
        loaded = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    except Exception as error:  # omegaconf's YAML errors
        raise RunDirectoryError(f"cannot read {path}: {str(error).splitlines()[0]}; use a new run_dir") from None
    if not isinstance(loaded, dict):
        raise RunDirectoryError(f"{path} is not a mapping; use a new run_dir")
    return {key: value for key, value in loaded.items() if key not in NOT_IDENTITY}


def write_identity(run_dir: Path, data: dict) -> None:
    from omegaconf import OmegaConf

    from zoo.safe_writes import atomic_write

    text = OmegaConf.to_yaml(OmegaConf.create(data))
    atomic_write(run_dir / CONFIG_NAME, lambda stream: stream.write(text.encode("utf-8")), sync=True)


def read_changes(run_dir: Path) -> list[dict]:
    """The changes recorded in ``changes.jsonl``, in order; a line zoo did not write (not JSON,
    or a change without its key, old and new values) is refused in one line naming it."""
    path = run_dir / CHANGES_NAME
    if not path.is_file():
        return []
    changes = []
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            recorded = json.loads(line)["changes"]
            if not all(isinstance(c, dict) and isinstance(c.get("key"), str) and {"old", "new"} <= set(c)
                       for c in recorded):
                raise TypeError
        except (ValueError, KeyError, TypeError):
            raise RunDirectoryError(f"{path} line {number} is not a change zoo recorded "
                                    "({\"changes\": [{\"key\", \"old\", \"new\"}, ...]}); "
                                    "restore the file or use a new run_dir") from None
        changes.extend(recorded)
    return changes


def record_changes(run_dir: Path, changes: list[Change]) -> None:
    """Append one line (time, the changes) to ``changes.jsonl``, atomically."""
    from zoo.safe_writes import atomic_write_text

    path = run_dir / CHANGES_NAME
    before = path.read_text() if path.is_file() else ""
    line = json.dumps({"time": _now(), "changes": [{"key": c.key, "old": c.old, "new": c.new} for c in changes]})
    atomic_write_text(path, before + line + "\n")


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _lock_now(run_dir: Path):
    """The run directory's lock, taken at once or refused naming its holder (never waited for)."""
    from filelock import FileLock, Timeout

    path = run_dir / LOCK_NAME
    if path.is_symlink() or path.exists() and not path.is_file():
        # the lock is opened for writing: through a link it would truncate whatever the link names
        raise RunDirectoryError(f"{str(path)!r} is not a lock file zoo made (a link or a folder); "
                                "remove it or use a new run_dir")
    lock = FileLock(str(path), timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise RunInUseError(f"run_dir {str(run_dir)!r} is in use by {holder(run_dir)}; "
                            "wait for it to end, or use a new run_dir") from None
    return lock


def acquire(run_dir: Path):
    """The run directory's lock, with the sidecar that names this process as its holder."""
    from zoo.safe_writes import atomic_write_text

    lock = _lock_now(run_dir)
    if (run_dir / HOLDER_NAME).is_file():  # a holder that closed removed its record: this one was killed
        log.warning("run_dir %s was last held by %s, which ended without closing it; going on from its last "
                    "checkpoint", run_dir, holder(run_dir))
    atomic_write_text(run_dir / HOLDER_NAME, json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                                         "started": _now()}) + "\n")
    return lock


def refuse_if_in_use(run_dir: Path) -> None:
    """RunInUseError if a live process holds the run's lock; probed without writing anything."""
    if (run_dir / LOCK_NAME).is_file():
        _lock_now(run_dir).release()


def holder(run_dir: Path) -> str:
    """Who holds the lock, as its sidecar says (the holder writes it just after locking)."""
    for _ in range(20):  # bounded: the sidecar is written right after the lock is taken
        try:
            record = json.loads((run_dir / HOLDER_NAME).read_text())
            return f"pid {record['pid']} on {record['host']} (started {record['started']})"
        except (OSError, ValueError, KeyError, TypeError):
            time.sleep(0.05)
    return "another process"


def remove_staging_leftovers(run_dir: Path) -> None:
    """Delete checkpoint staging files a killed writer left (under the lock none is live)."""
    for pattern in ("checkpoints/.*.tmp", "checkpoints/.*.partial", "warmup/checkpoints/.*.tmp",
                    "warmup/checkpoints/.*.partial"):
        for leftover in run_dir.glob(pattern):
            if leftover.is_file() and not leftover.is_symlink():
                leftover.unlink(missing_ok=True)


def take_stage(directory: Path, sha256: str, name: str) -> None:
    """Claim ``directory`` (a stage inside a run, e.g. the Blocks warm-up) for the configuration
    hash ``sha256``; a stage made from another configuration is refused in one line. A stage
    from before stages were marked is adopted (the run's own config.yaml matched already)."""
    from zoo.safe_writes import marker_record, write_marker

    recorded = marker_record(directory).get("config_sha256")
    if recorded is not None and recorded != sha256:
        raise StageMismatchError(f"{name} in {str(directory)!r} was made from another configuration "
                                 f"(config_sha256 {recorded[:12]}, this run's {sha256[:12]}); use a new run_dir")
    if recorded is None:
        directory.mkdir(parents=True, exist_ok=True)
        write_marker(directory, kind=STAGE_KIND, config_sha256=sha256)


@contextmanager
def one_line_write_errors(run_dir: Path):
    """A full disk (or quota) while a run writes its files ends in one line, not a traceback;
    every file is written beside its final name and renamed, so the previous ones stay whole."""
    try:
        yield
    except OSError as error:
        if getattr(error, "errno", None) in (errno.ENOSPC, errno.EDQUOT):
            raise SystemExit(f"cannot write to {str(run_dir)!r}: {error.strerror}; the previous files are intact, "
                             "free space and rerun the same command") from None
        raise
    except RunDirectoryError as error:
        raise SystemExit(str(error)) from None
