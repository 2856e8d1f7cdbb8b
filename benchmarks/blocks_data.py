"""Throughput of BlocksDataModule: supervised demonstration steps per second, collated into
model inputs (frames rendered on the fly, history stacks, standardisation, tokens).

    python benchmarks/blocks_data.py --json        # real data if $ZOO_DATA_DIR has it
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import time

import torch

from zoo.blocks.datamodule import BlocksDataModule


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--batches", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    datamodule = BlocksDataModule(batch_size=args.batch_size)
    datamodule.setup()
    loader = datamodule.train_dataloader()
    iterator = iter(loader)
    next(iterator)  # warm the renderer's caches
    rates = []
    for _ in range(args.repeats):
        started = time.perf_counter()
        for _ in itertools.islice(iterator, args.batches):
            pass
        rates.append(args.batches * args.batch_size / (time.perf_counter() - started))
    result = {
        "data": getattr(datamodule, "data_source", "procedural"),
        "batch_size": args.batch_size,
        "threads": args.threads,
        "steps_per_epoch": len(loader.dataset),
        "supervised_steps_per_s": statistics.median(rates),
    }
    result["epoch_collation_minutes"] = result["steps_per_epoch"] / result["supervised_steps_per_s"] / 60
    for key, value in result.items():
        print(f"{key:26s} {value:,.1f}" if isinstance(value, float) else f"{key:26s} {value}")
    if args.json:
        print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in result.items()}))


if __name__ == "__main__":
    main()
