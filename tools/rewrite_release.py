"""Rewrite a release's weights into the standard Hugging Face layout, in place.

    python tools/rewrite_release.py checkpoints/light-generative
    python tools/rewrite_release.py /tmp/copy/light-cross-ranker --manifest /tmp/copy/manifest.json

Releases saved before zoo wrote whole tensors store a tensor larger than a shard as
NAME#partIofN row blocks, which safetensors and Hugging Face loaders cannot put back together.
This loads the release through zoo's own loader, saves its weights again with zoo's saver
(whole tensors named by the state_dict keys; the stored float type kept, e.g. float16), and
replaces the old weight files and the release's manifest entry together.

Nothing is written unless the folder's files are the release the manifest lists (every file's
sha256 and size; its name is the directory's, or --name). Without --manifest that is the
package's zoo/manifest.json, and a folder whose files are not its release is refused. The new
files are staged in a full copy of the release beside it (.rewrite-NAME) and checked there:
every stored tensor equal (same values, same dtype) and the model loaded from the copy equal,
parameter for parameter, to the one loaded from the release. Only then, after a journal
(.rewrite-NAME.json) is written, renames move the new weight files in beside the old ones, put
the new manifest in place and remove the old files, so the folder verifies against the manifest
at every moment; only where a new file takes an old one's name does the old one wait in
.previous-NAME until the manifest changes. Running the tool again after a kill finishes or
undoes what the journal records. config.json, the tokenizer and other files are left as they are.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script from a checkout
    sys.path.insert(0, str(REPO))

from zoo.safe_writes import atomic_write  # noqa: E402
from zoo.hub import ManifestError, PretrainedEntry, load_manifest, sha256_of  # noqa: E402
from zoo.weights import (  # noqa: E402
    DEFAULT_MAX_SHARD_SIZE,
    INDEX_FILE,
    join_parts,
    reading_row_blocks,
    save_weights,
    weight_files,
)

MANIFEST = REPO / "zoo" / "manifest.json"
PHASES = ("staging", "swapping")
"""A journal's phases: the release untouched (staging), or renames under way (swapping)."""


def boundary(label: str) -> None:
    """A point between two steps of a rewrite, where a kill must leave the release whole
    (the tests stop the tool at each one)."""


class Places:
    """Where a rewrite of ``directory`` works, beside it, under names derived from its own, so
    that a later run finds what an interrupted one left."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.staging = directory.parent / f".rewrite-{directory.name}"
        self.backup = directory.parent / f".previous-{directory.name}"
        self.journal = directory.parent / f".rewrite-{directory.name}.json"


def staged_manifest(manifest: Path) -> Path:
    """The new manifest, written beside the old one so that one rename replaces it."""
    return manifest.with_name(f".{manifest.name}.rewrite")


def weight_names(directory: Path) -> list[str]:
    """The weight files of a release (shards, and the index when there is one), by name."""
    return [p.name for p in weight_files(directory)] + ([INDEX_FILE] if (directory / INDEX_FILE).is_file() else [])


def stored_tensors(directory: Path) -> dict:
    """Every tensor the weight files of ``directory`` hold, row blocks joined, in its stored dtype."""
    from safetensors.torch import load_file

    state = {}
    for path in weight_files(directory):
        state.update(load_file(str(path)))
    return join_parts(state)


def stored_float_dtype(state: dict):
    """The one floating type the release stores, so the rewrite keeps it (None: nothing floating)."""
    dtypes = {tensor.dtype for tensor in state.values() if tensor.is_floating_point()}
    if len(dtypes) > 1:
        raise SystemExit(f"the release stores floating tensors in several types ({sorted(map(str, dtypes))}); "
                         "rewriting would change some of them")
    return dtypes.pop() if dtypes else None


def differences(before, after) -> list[str]:
    """Names whose tensors differ (value, dtype or shape) between two state dicts, or that one lacks."""
    import torch

    names = set(before) | set(after)
    return sorted(name for name in names if name not in before or name not in after
                  or before[name].dtype != after[name].dtype or not torch.equal(before[name], after[name]))


# ---------------------------------------------------------------------------- the release checked first
def mismatches(directory: Path, entry: PretrainedEntry) -> list[str]:
    """How ``directory`` differs from the manifest's ``entry`` (empty: it is that release): a
    listed file missing or with another size or sha256, or a weight file the entry does not list."""
    problems = []
    for file in entry.files:
        path = directory / file.name
        if not path.is_file():
            problems.append(f"{file.name} is missing")
        elif path.stat().st_size != file.size:
            problems.append(f"{file.name} has {path.stat().st_size} bytes, not {file.size}")
        elif sha256_of(path) != file.sha256:
            problems.append(f"{file.name} has another sha256")
    try:
        listed = {file.name for file in entry.files}
        problems += [f"{name} is not listed" for name in weight_names(directory) if name not in listed]
    except (OSError, ValueError) as error:
        problems.append(str(error))
    return problems


def check_release(directory: Path, manifest: Path, name: str, named: bool) -> None:
    """Refuse, in one line and before anything is written, a folder that is not the release
    ``manifest`` lists as ``name``: its hashes would be written for files nobody released.
    ``named``: the manifest was given (--manifest), not the package's own."""
    try:
        entries = load_manifest(manifest)
    except ManifestError as error:
        raise SystemExit(str(error)) from None
    if name not in entries:
        if named:
            raise SystemExit(f"{manifest} has no release named {name} (pass --name)")
        raise SystemExit(f"{directory} is not a release of {manifest} (none is named {name}); "
                         "pass --manifest with the manifest that lists it")
    problems = mismatches(directory, entries[name])
    if problems:
        how = ("its files must match the entry before the rewrite; restore them or fix the entry" if named
               else "pass --manifest with the manifest that lists this folder")
        raise SystemExit(f"{directory} is not the release {name} of {manifest} ({'; '.join(problems[:3])}); {how}")


def check_room(places: Places) -> None:
    """Refuse when a working folder's name is taken by something no journal of this tool names."""
    for path in (places.staging, places.backup):
        if os.path.lexists(path):
            raise SystemExit(f"{path} is in the way of the rewrite and no rewrite journal names it; "
                             "move it away and run again")


# ---------------------------------------------------------------------------- the journal
def write_journal(places: Places, record: dict) -> None:
    """Record, synced to disk, what a later run needs to finish or undo this one."""
    write_synced(places.journal, json.dumps(record, indent=2) + "\n")


def write_synced(path: Path, text: str) -> Path:
    """``text`` at ``path``, whole or not at all, on disk before the renames that rely on it."""
    return atomic_write(path, lambda stream: stream.write(text.encode("utf-8")), sync=True)


def read_journal(places: Places) -> dict:
    """The journal an interrupted rewrite left, checked: it only names files of the release."""
    try:
        record = json.loads(places.journal.read_text())
        plain = all(isinstance(n, str) and n and Path(n).name == n and n not in (".", "..")
                    for n in record.get("old", []) + record.get("new", []))
        if record["phase"] not in PHASES or not plain or not isinstance(record["manifest"], str):
            raise ValueError("unexpected contents")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise SystemExit(f"cannot read the rewrite journal {places.journal} ({error}); "
                         "compare the release with its manifest and remove the journal by hand") from None
    return record


def finish_interrupted(places: Places) -> bool:
    """Finish or undo what an interrupted rewrite of the folder left (nothing: False). True when
    the new release was already in place (the manifest swapped): only leftovers are removed."""
    if not places.journal.is_file():
        return False
    record = read_journal(places)
    manifest = Path(record["manifest"])
    swapped = (record["phase"] == "swapping" and manifest.is_file()
               and sha256_of(manifest) == record["manifest_sha256"]
               and not any(os.path.lexists(places.staging / name) for name in record["new"]))
    if swapped:
        drop_old(places, record["old"], record["new"])
    elif record["phase"] == "swapping":
        roll_back(places, record["old"], record["new"])
    remove_leftovers(places, manifest)
    print(f"{'finished' if swapped else 'undid'} an interrupted rewrite of {places.directory}")
    return swapped


def roll_back(places: Places, old: list[str], new: list[str]) -> None:
    """Put the old weight files back: new ones already moved in return to the staging copy (an
    old file of the same name was set aside first, so a new name in the release is a new file)."""
    for name in new:
        if not os.path.lexists(places.staging / name) and os.path.lexists(places.directory / name):
            os.replace(places.directory / name, places.staging / name)
    for name in old:
        if os.path.lexists(places.backup / name):
            os.replace(places.backup / name, places.directory / name)


def remove_leftovers(places: Places, manifest: Path) -> None:
    """Remove the working copies, the journal last so that a kill in between is finished again."""
    staged_manifest(manifest).unlink(missing_ok=True)
    shutil.rmtree(places.backup, ignore_errors=True)
    boundary("backup removed")
    shutil.rmtree(places.staging, ignore_errors=True)
    boundary("staging removed")
    places.journal.unlink(missing_ok=True)


# ---------------------------------------------------------------------------- the rewrite
def stage(directory: Path, staging: Path, old: list[str], max_shard_size, model, dtype) -> list[str]:
    """A full copy of the release in ``staging`` with the new weight files; their names."""
    shutil.copytree(directory, staging, ignore=lambda folder, names: old if Path(folder) == directory else [])
    return [p.name for p in save_weights(model, staging, max_shard_size, dtype)] + (
        [INDEX_FILE] if (staging / INDEX_FILE).is_file() else [])


def check_staged(staging: Path, before_stored: dict, before_loaded: dict) -> None:
    """The staged copy must hold the same tensors, whole, and load into the same model."""
    from zoo.factory import Grounded  # the factory: every model class can be named by the config

    after_stored = stored_tensors(staging)
    shared = set(before_stored) & set(after_stored)  # a tied pair may be stored under its other name
    changed = differences({n: before_stored[n] for n in shared}, {n: after_stored[n] for n in shared})
    if changed or len(after_stored) != len(before_stored) or any("#" in name for name in after_stored):
        raise SystemExit(f"the rewritten weights differ from the release's: {changed[:5] or sorted(after_stored)[:5]}")
    changed = differences(before_loaded, Grounded.from_pretrained(staging).state_dict())
    if changed:
        raise SystemExit(f"the model loaded from the rewritten files differs in {changed[:5]}")


def stage_manifest(manifest_path: Path, name: str, old: list[str], staging: Path, new: list[str]) -> Path:
    """Write the manifest with the release's old weight entries replaced by the new files' sha256
    and size (each URL in the place of the old files' URLs) beside the old one; checked valid."""
    manifest = json.loads(manifest_path.read_text())
    entry = next((m for m in manifest["models"] if m["name"] == name), None)
    if entry is None:
        raise SystemExit(f"{manifest_path} has no release named {name} (pass --name)")
    weights = [f for f in entry["files"] if f["name"] in old]
    if not weights:
        raise SystemExit(f"{manifest_path}: {name} lists none of the weight files {sorted(old)}")
    base = weights[0]["url"].rsplit("/", 1)[0] + "/" if "/" in weights[0]["url"] else ""
    kept = [f for f in entry["files"] if f["name"] not in old]
    added = [{"name": n, "url": base + n, "sha256": sha256_of(staging / n), "size": (staging / n).stat().st_size}
             for n in new]
    entry["files"] = sorted(kept + added, key=lambda f: f["name"])
    staged = write_synced(staged_manifest(manifest_path), json.dumps(manifest, indent=2) + "\n")
    load_manifest(staged)  # never put an invalid manifest in place
    return staged


def swap(places: Places, old: list[str], new: list[str], manifest: Path) -> None:
    """Renames only. The new weight files move in beside the old ones (shards first: while the
    old index stays it names the old shards, and the old manifest does not list the new files),
    the manifest's rename makes them the release, then the old files go. Only an old file whose
    name a new one takes is set aside before that rename; the journal undoes a kill meanwhile."""
    places.backup.mkdir()
    for name in old:
        if name in new:
            os.replace(places.directory / name, places.backup / name)
            boundary(f"{name} set aside")
    for name in sorted(new, key=lambda n: n == INDEX_FILE):
        os.replace(places.staging / name, places.directory / name)
        boundary(f"{name} moved in")
    os.replace(staged_manifest(manifest), manifest)
    boundary("manifest replaced")
    drop_old(places, old, new)


def drop_old(places: Places, old: list[str], new: list[str]) -> None:
    """Remove the old weight files the new release does not have, the index first, so that the
    folder never names a shard it lacks."""
    for name in sorted((n for n in old if n not in new), key=lambda n: n != INDEX_FILE):
        (places.directory / name).unlink(missing_ok=True)
        boundary(f"{name} removed")


def rewrite(directory: Path, manifest: Path, name: str,
            max_shard_size: int | str = DEFAULT_MAX_SHARD_SIZE) -> tuple[list[str], list[str]]:
    """Rewrite the verified release ``directory`` and its entry ``name`` in ``manifest``;
    returns (old weight file names, new ones)."""
    from zoo.factory import Grounded

    places = Places(directory)
    old = weight_names(directory)
    before_stored = stored_tensors(directory)
    dtype = stored_float_dtype(before_stored)
    with reading_row_blocks():  # the old layout, which zoo itself no longer loads
        model = Grounded.from_pretrained(directory)
    before_loaded = {key: tensor.clone() for key, tensor in model.state_dict().items()}
    write_journal(places, {"phase": "staging", "manifest": str(manifest)})
    boundary("journal written")
    try:
        new = stage(directory, places.staging, old, max_shard_size, model, dtype)
        boundary("new files staged")
        check_staged(places.staging, before_stored, before_loaded)
        staged = stage_manifest(manifest, name, old, places.staging, new)
        boundary("manifest staged")
    except BaseException:
        remove_leftovers(places, manifest)
        raise
    write_journal(places, {"phase": "swapping", "manifest": str(manifest), "manifest_sha256": sha256_of(staged),
                           "old": old, "new": new})
    boundary("swap journal written")
    swap(places, old, new, manifest)
    remove_leftovers(places, manifest)
    return old, new


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     epilog="The folder must be the release the manifest lists, and the model "
                                     "loaded from the new files must equal the old one, parameter for parameter, "
                                     "or nothing is changed.")
    parser.add_argument("directory", type=Path, help="a release directory (config.json and its weights)")
    parser.add_argument("--manifest", type=Path,
                        help="the manifest listing it (default: zoo/manifest.json, whose release the folder must be)")
    parser.add_argument("--name", help="its name in the manifest (default: the directory's name)")
    parser.add_argument("--max-shard-size", default=DEFAULT_MAX_SHARD_SIZE,
                        help="bytes or a size such as '5GB', as transformers takes it (default: %(default)s)")
    args = parser.parse_args(argv)
    size = int(args.max_shard_size) if args.max_shard_size.isdigit() else args.max_shard_size
    directory = args.directory.resolve()
    manifest = (args.manifest or MANIFEST).resolve()
    places = Places(directory)
    if finish_interrupted(places):
        return
    check_release(directory, manifest, args.name or directory.name, named=args.manifest is not None)
    check_room(places)
    old, new = rewrite(directory, manifest, args.name or directory.name, size)
    print(f"rewrote {directory}: {len(old)} weight files -> {len(new)} ({', '.join(new)}); {manifest} updated")


if __name__ == "__main__":
    main()
