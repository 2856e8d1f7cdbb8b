"""Speed of the LIGHT generative transformer on this machine.

    python benchmarks/light_generate.py --sim-dir runs/light-sim-full --threads 1 --json

Per starting point (``--start scratch minilm``), medians over ``--repeats``:
``train_examples_per_s`` (forward + backward + AdamW at ``--batch-size``),
``beam_seconds_per_utterance`` and ``generated_tokens_per_s`` (beam ``--beam-size``,
``--max-new-tokens``, one context at a time as in a game), and ``score_candidates_per_s``
(likelihood of the 20 dialogue candidates of an example). ``--model`` measures a saved
model instead of fresh ones. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import torch

from zoo.light.datamodule import LightDataModule
from zoo.models.generative import GenerativeTransformer


def measure(model: GenerativeTransformer, module: LightDataModule, args) -> dict:
    train = module.dataset("train")
    valid = module.dataset("valid")
    if model.tokenizer is None:
        model.setup_from_data(train)
    model.log = lambda *a, **k: None  # outside a Trainer
    optimizer = model.configure_optimizers()
    batch = model.collate([train[i] for i in range(args.batch_size)])
    contexts = [valid[i].context for i in range(args.utterances)]
    rates: dict[str, list[float]] = {"train": [], "beam": [], "tokens": [], "score": []}
    model.train()
    model.training_step(batch, 0).backward()  # warm-up
    optimizer.zero_grad()
    for _ in range(args.repeats):
        started = time.perf_counter()
        loss = model.training_step(batch, 0)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        rates["train"].append(args.batch_size / (time.perf_counter() - started))
        started = time.perf_counter()
        outputs = [model.generate(c, beam_size=args.beam_size, max_new_tokens=args.max_new_tokens)[0] for c in contexts]
        seconds = time.perf_counter() - started
        tokens = sum(len(model._ids([o])[0]) + 1 for o in outputs)
        rates["beam"].append(seconds / len(contexts))
        rates["tokens"].append(tokens / seconds)
        item = valid[0]
        started = time.perf_counter()
        model.score([item.context], [list(item.candidates)])
        rates["score"].append(len(item.candidates) / (time.perf_counter() - started))
    return {
        "parameters_millions": round(sum(p.numel() for p in model.parameters()) / 1e6, 2),
        "train_examples_per_s": round(statistics.median(rates["train"]), 2),
        "beam_seconds_per_utterance": round(statistics.median(rates["beam"]), 3),
        "generated_tokens_per_s": round(statistics.median(rates["tokens"]), 1),
        "score_candidates_per_s": round(statistics.median(rates["score"]), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sim-dir", required=True, help="a LIGHT-sim corpus (zoo light sim --out DIR)")
    parser.add_argument("--start", nargs="+", default=["scratch", "minilm"], choices=("scratch", "minilm"))
    parser.add_argument("--model", help="a saved model directory or released name (instead of --start)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--utterances", type=int, default=4)
    parser.add_argument("--beam-size", type=int, default=5)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    module = LightDataModule("dialogue", source="sim", sim_dir=args.sim_dir, limit={"train": 2000, "valid": 50})
    module.prepare_data()
    results = {"threads": args.threads, "batch_size": args.batch_size, "beam_size": args.beam_size}
    models = {args.model: GenerativeTransformer.from_pretrained(args.model)} if args.model else {
        start: GenerativeTransformer(start=start) for start in args.start}
    for name, model in models.items():
        results[name] = measure(model, module, args)
        print(name, results[name], file=sys.stderr if args.json else sys.stdout)
    if args.json:
        print(json.dumps(results))


if __name__ == "__main__":
    main()
