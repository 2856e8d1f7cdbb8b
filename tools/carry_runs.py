"""Carry the resumable state of unfinished runs across machines, through git.

``runs/`` is not committed, and a session can start on a fresh clone of main with no ``runs/``
at all (session 9 did: eight sessions' run directories were gone, seeds and corpora with
them). What a half-done run needs to continue is small (a Blocks ``last.ckpt`` is 10 MB), so
at the end of a session its files are copied into the committed ``carried/`` folder, and the
next session puts them back before relaunching:

    python tools/carry_runs.py save runs/blocks/bandit-s1/last.ckpt runs/blocks/sup-orig-s1/checkpoints
    git add carried && git commit -m "carried: ..."
    python tools/carry_runs.py restore        # next session, before tools/launch_run.sh

``save`` replaces the carried set with exactly the paths it is given (files, or folders
copied whole), so finished runs drop out of it; ``save --keep`` adds or refreshes the paths
given and keeps every other carried file, the short form for carrying a running job's progress
mid-session (a session cut off before its end loses only what changed since). ``carried/MANIFEST.json``
lists each file's sha256. ``restore`` copies a file back only where ``runs/`` lacks it, checks its sha256, and
never overwrites: a run that moved on here keeps its newer state.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MANIFEST = "MANIFEST.json"
SKIPPED_DIRS = {"wandb", "code", "logs", "__pycache__"}  # logs of W&B, frozen code: rebuilt or not needed


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def files_under(root: Path, given: list[str]) -> list[Path]:
    """The files named, relative to root, folders expanded (minus W&B logs and frozen code)."""
    runs = (root / "runs").resolve()
    found: list[Path] = []
    for name in given:
        path = (root / name).resolve() if not Path(name).is_absolute() else Path(name).resolve()
        if runs not in path.parents:
            raise SystemExit(f"carry_runs: {name} is not inside {runs}; only run state is carried")
        if not path.exists():
            raise SystemExit(f"carry_runs: {name} does not exist")
        if path.is_file():
            found.append(path)
            continue
        found.extend(p for p in sorted(path.rglob("*"))
                     if p.is_file() and not SKIPPED_DIRS & set(p.relative_to(path).parts[:-1]))
    return found


def save(root: Path, given: list[str], keep: bool = False) -> dict:
    """Writes carried/ anew from the files given; with keep, the carried files not given stay."""
    carried = root / "carried"
    if carried.exists() and not (carried / MANIFEST).is_file():
        raise SystemExit(f"carry_runs: {carried} exists without {MANIFEST}; not replacing a folder zoo did not write")
    files = files_under(root, given)
    staging = root / "carried.partial"
    if staging.exists():
        shutil.rmtree(staging)
    entries = {}
    if keep and carried.exists():
        kept = json.loads((carried / MANIFEST).read_text())
        for relative, entry in kept.items():
            target = staging / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(carried / relative, target)
            entries[relative] = entry
    for path in files:
        relative = path.relative_to(root.resolve()).as_posix()
        target = staging / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
        entries[relative] = {"sha256": sha256(target), "bytes": target.stat().st_size}
    staging.mkdir(exist_ok=True)
    (staging / MANIFEST).write_text(json.dumps(entries, indent=1, sort_keys=True) + "\n")
    if carried.exists():
        shutil.rmtree(carried)
    staging.rename(carried)
    return entries


def restore(root: Path) -> tuple[list[str], list[str]]:
    """Copies missing files back; returns (restored, kept) relative paths."""
    carried = root / "carried"
    if not (carried / MANIFEST).is_file():
        return [], []
    entries = json.loads((carried / MANIFEST).read_text())
    restored, kept = [], []
    for relative, entry in sorted(entries.items()):
        source, target = carried / relative, root / relative
        if sha256(source) != entry["sha256"]:
            raise SystemExit(f"carry_runs: {source} does not match its recorded sha256; not restoring it")
        if target.exists():
            kept.append(relative)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
        restored.append(relative)
    return restored, kept


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=REPO, help=argparse.SUPPRESS)
    commands = parser.add_subparsers(dest="command", required=True)
    saving = commands.add_parser("save", help="replace carried/ with these run files and folders")
    saving.add_argument("paths", nargs="+")
    saving.add_argument("--keep", action="store_true",
                        help="add or refresh these paths and keep every other carried file")
    commands.add_parser("restore", help="copy carried files back where runs/ lacks them")
    args = parser.parse_args(argv)
    if args.command == "save":
        entries = save(args.root, args.paths, keep=args.keep)
        total = sum(e["bytes"] for e in entries.values())
        print(f"carried {len(entries)} files, {total / 2**20:.1f} MiB, into {args.root / 'carried'}; commit it")
    else:
        restored, kept = restore(args.root)
        for relative in restored:
            print(f"restored {relative}")
        if kept:
            print(f"kept {len(kept)} newer files already in runs/", file=sys.stderr)
        if not restored and not kept:
            print("nothing carried")


if __name__ == "__main__":
    main()
