"""Publish a trained model: its files under checkpoints/, its entry in the package's manifest.

    python tools/release_checkpoint.py blocks-bandit runs/blocks/bandit/pretrained \
        --description "CNN-LSTM block policy, contextual bandit with F1+F2 shaping" \
        --training-data "Blocks train split, 11,196 examples (675 held out for tuning)" \
        --cost "9 h on 2 CPU cores" --metric dev_mean_distance_error=3.61 --metric ...

Copies the save_pretrained files to checkpoints/<name>/ (the release root: upload this folder
to the release host, whose base URL users set as $ZOO_HUB_URL), records their sha256 and size
in zoo/manifest.json, which ships inside the package (replacing an entry of the same name),
and points the entry at the model card checkpoints/cards/<name>.md, which must exist: a
release without a card is refused.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

from zoo.hub import load_manifest, sha256_of

REPO = Path(__file__).resolve().parent.parent
CHECKPOINTS = REPO / "checkpoints"
MANIFEST = REPO / "zoo" / "manifest.json"


def parse_metric(text: str) -> tuple[str, float]:
    key, _, value = text.partition("=")
    if not key or not value:
        raise argparse.ArgumentTypeError(f"--metric takes key=value, got {text!r}")
    return key, float(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("name")
    parser.add_argument("directory", type=Path, help="a save_pretrained directory")
    parser.add_argument("--description", required=True)
    parser.add_argument("--training-data", required=True)
    parser.add_argument("--cost", required=True, help="training compute, e.g. '9 h on 2 CPU cores'")
    parser.add_argument("--metric", type=parse_metric, action="append", default=[])
    parser.add_argument("--license", default="MIT")
    parser.add_argument("--weights-dtype", choices=("float16", "bfloat16"),
                        help="store the floating weights in this type (half the download; they load into the "
                        "model's own precision): the run's model is loaded and saved again; measure the release")
    args = parser.parse_args()
    card = CHECKPOINTS / "cards" / f"{args.name}.md"
    if not card.is_file():
        raise SystemExit(f"write the model card {card} first")
    with tempfile.TemporaryDirectory() as staging:
        source_dir = args.directory
        if args.weights_dtype:
            import torch

            from zoo.factory import Grounded  # the factory: every model class can be named by the config

            source_dir = Path(staging) / "converted"
            Grounded.from_pretrained(args.directory).save_pretrained(source_dir,
                                                                    weights_dtype=getattr(torch, args.weights_dtype))
        release(args, source_dir)


def release(args: argparse.Namespace, directory: Path) -> None:
    config = json.loads((directory / "config.json").read_text())
    target = CHECKPOINTS / args.name
    target.mkdir(parents=True, exist_ok=True)
    files = []
    from zoo.safe_writes import MARKER_NAME

    for source in sorted(p for p in directory.rglob("*") if p.is_file() and p.name != MARKER_NAME):
        name = source.relative_to(directory).as_posix()  # e.g. tokenizer/tokenizer.json
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target / name)
        files.append({"name": name, "url": f"{args.name}/{name}", "sha256": sha256_of(source),
                      "size": source.stat().st_size})
    manifest_path = MANIFEST
    manifest = json.loads(manifest_path.read_text())
    previous = next((m for m in manifest["models"] if m["name"] == args.name), None)
    manifest["models"] = [m for m in manifest["models"] if m["name"] != args.name]
    manifest["models"].append({
        "name": args.name, "model_class": config["model_class"], "description": args.description, "files": files,
        "training_data": args.training_data, "metrics": dict(args.metric), "training_cost": args.cost,
        "license": args.license, "card": f"cards/{args.name}.md",
    })
    manifest["models"].sort(key=lambda m: m["name"])
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    load_manifest(manifest_path)  # refuse to leave an invalid manifest behind
    # Files of the replaced release that this one does not have (old shards): ours to remove,
    # because the previous manifest entry lists them; nothing else in the folder is touched.
    kept = {f["name"] for f in files}
    stale = [f["name"] for f in (previous or {}).get("files", []) if f["name"] not in kept]
    for name in stale:
        (target / name).unlink(missing_ok=True)
    print(f"released {args.name}: {len(files)} files in {target}" + (f", {len(stale)} old files removed" if stale else ""))


if __name__ == "__main__":
    main()
