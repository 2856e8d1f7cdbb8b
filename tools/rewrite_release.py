"""Rewrite a release's weights into the standard Hugging Face layout, in place.

    python tools/rewrite_release.py checkpoints/light-generative
    python tools/rewrite_release.py /tmp/copy/light-cross-ranker --manifest /tmp/copy/manifest.json

Releases saved before zoo wrote whole tensors store a tensor larger than a shard as
NAME#partIofN row blocks, which safetensors and Hugging Face loaders cannot put back together.
This loads the release through zoo's own loader, saves its weights again with zoo's saver
(whole tensors named by the state_dict keys; the stored float type kept, e.g. float16), and
replaces the old weight files only after checking that every stored tensor is equal (same
values, same dtype) and that the model loaded from the new files has every parameter and buffer
torch.equal to the one loaded from the old files; on any difference the old files are put back.
The release's entry in the manifest (its name is the directory's, or --name) then lists the new
weight files with their sha256 and size; config.json, the tokenizer and other files are left as
they are.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script from a checkout
    sys.path.insert(0, str(REPO))

from zoo.hub import load_manifest, sha256_of  # noqa: E402
from zoo.weights import DEFAULT_MAX_SHARD_SIZE, INDEX_FILE, join_parts, save_weights, weight_files  # noqa: E402

MANIFEST = REPO / "zoo" / "manifest.json"


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


def rewrite(directory: Path, max_shard_size: int | str = DEFAULT_MAX_SHARD_SIZE) -> tuple[list[Path], list[Path]]:
    """Rewrite ``directory``'s weights in place; returns (old weight files, new weight files)."""
    from zoo.factory import Grounded  # the factory: every model class can be named by the config

    old_files = weight_files(directory)
    old_names = [p.name for p in old_files] + ([INDEX_FILE] if (directory / INDEX_FILE).is_file() else [])
    before_stored = stored_tensors(directory)
    dtype = stored_float_dtype(before_stored)
    model = Grounded.from_pretrained(directory)
    before_loaded = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    staging = Path(tempfile.mkdtemp(prefix=".rewrite-", dir=directory.parent))
    backup = Path(tempfile.mkdtemp(prefix=".previous-", dir=directory.parent))
    try:
        new_files = save_weights(model, staging, max_shard_size, dtype)
        new_names = [p.name for p in new_files] + ([INDEX_FILE] if (staging / INDEX_FILE).is_file() else [])
        after_stored = stored_tensors(staging)
        shared = set(before_stored) & set(after_stored)  # a tied pair may be stored under its other name
        changed = differences({n: before_stored[n] for n in shared}, {n: after_stored[n] for n in shared})
        if changed or len(after_stored) != len(before_stored) or any("#" in name for name in after_stored):
            raise SystemExit(f"the rewritten weights differ from the release's: {changed[:5] or sorted(after_stored)[:5]}")
        for name in old_names:
            os.replace(directory / name, backup / name)
        for name in new_names:
            os.replace(staging / name, directory / name)
        try:
            after_loaded = Grounded.from_pretrained(directory).state_dict()
            changed = differences(before_loaded, after_loaded)
            if changed:
                raise SystemExit(f"the model loaded from the rewritten files differs in {changed[:5]}")
        except BaseException:
            for name in new_names:
                (directory / name).unlink(missing_ok=True)
            for name in old_names:
                os.replace(backup / name, directory / name)
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(backup, ignore_errors=True)
    return old_files, [directory / name for name in new_names]


def update_manifest(manifest_path: Path, name: str, old_files: list[Path], new_files: list[Path]) -> None:
    """Replace the release's entries for its old weight files by the new files' sha256 and size,
    each URL in the place of the old files' URLs."""
    manifest = json.loads(manifest_path.read_text())
    entry = next((m for m in manifest["models"] if m["name"] == name), None)
    if entry is None:
        raise SystemExit(f"{manifest_path} has no release named {name} (pass --name)")
    old = {p.name for p in old_files} | {INDEX_FILE}
    weights = [f for f in entry["files"] if f["name"] in old]
    if not weights:
        raise SystemExit(f"{manifest_path}: {name} lists none of the weight files {sorted(old)}")
    base = weights[0]["url"].rsplit("/", 1)[0] + "/" if "/" in weights[0]["url"] else ""
    kept = [f for f in entry["files"] if f["name"] not in old]
    added = [{"name": p.name, "url": base + p.name, "sha256": sha256_of(p), "size": p.stat().st_size}
             for p in new_files]
    entry["files"] = sorted(kept + added, key=lambda f: f["name"])
    staging = manifest_path.with_name(f".{manifest_path.name}.rewrite")
    staging.write_text(json.dumps(manifest, indent=2) + "\n")
    try:
        load_manifest(staging)  # never leave an invalid manifest behind
    except BaseException:
        staging.unlink(missing_ok=True)
        raise
    os.replace(staging, manifest_path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     epilog="The model loaded from the new files must equal the old one, "
                                     "parameter for parameter, or nothing is changed.")
    parser.add_argument("directory", type=Path, help="a release directory (config.json and its weights)")
    parser.add_argument("--manifest", type=Path, default=MANIFEST, help="the manifest listing it (default: zoo/manifest.json)")
    parser.add_argument("--name", help="its name in the manifest (default: the directory's name)")
    parser.add_argument("--max-shard-size", default=DEFAULT_MAX_SHARD_SIZE,
                        help="bytes or a size such as '5GB', as transformers takes it (default: %(default)s)")
    args = parser.parse_args(argv)
    size = int(args.max_shard_size) if args.max_shard_size.isdigit() else args.max_shard_size
    directory = args.directory.resolve()
    old_files, new_files = rewrite(directory, size)
    update_manifest(args.manifest, args.name or directory.name, old_files, new_files)
    print(f"rewrote {directory}: {len(old_files)} weight files -> {len(new_files)} "
          f"({', '.join(p.name for p in new_files)}); {args.manifest} updated")


if __name__ == "__main__":
    main()
