"""What a LIGHT-sim v2 line costs on this machine, by precision and batch size.

    python benchmarks/light_sim_llm.py --json [--chats 6] [--threads 1] [--variants float32:16,bfloat16:16,bfloat16:64]
    python benchmarks/light_sim_llm.py --json --chats 16 --variants bfloat16:64:sort,bfloat16:64
    python benchmarks/light_sim_llm.py --json --chats 32 --variants bfloat16:64:noreuse,bfloat16:64

A variant ``dtype:batch:sort`` decodes with the plain reference sampler (sort the whole
vocabulary, ``torch.multinomial`` over it: what the writer did before :func:`nucleus_sample`),
so the two samplers are measured side by side; their lines differ (they spend the seeds
differently), their distributions do not. A variant ``dtype:batch:noreuse`` prefills every
prompt whole instead of reusing what it shares with its speaker's previous prompt
(:mod:`zoo.light.sim.prompt_prefixes`); ``reused_tokens`` counts the prompt tokens not run again
(``prompt_tokens`` counts them all). ``sampler_ms`` times the two samplers alone on one
decoding step's probabilities (64 rows of the model's vocabulary).

Each variant writes the speech of the same few chats (the first ``--chats`` of the tiny preset's
test split in the real world, so the prompts are the corpus's own) from an empty line cache,
in one process one after another, and reports the writer's counters: prompt tokens and
prefill seconds, decoding steps and seconds, seconds per line, and how many lines came out
the same as the first variant's. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from pathlib import Path

from zoo.light.environment import load_world
from zoo.light.sim.line_writer import ChatLineWriter, nucleus_sample
from zoo.light.sim import SimConfig, build_corpus


def sort_and_multinomial(probs, top_p: float, generators):
    """The plain reference sampler: sort each row whole, zero what lies past the nucleus, draw."""
    import torch

    ordered, order = probs.sort(dim=-1, descending=True)
    ordered = ordered * (ordered.cumsum(-1) - ordered < top_p)
    return torch.cat([order[row, torch.multinomial(ordered[row], 1, generator=generators[row])]
                      for row in range(probs.shape[0])])


def time_samplers(vocabulary: int, rows: int = 64, repeats: int = 7) -> dict:
    """Median ms per decoding step of each sampler on temperature-0.8 probabilities."""
    import torch

    logits = torch.randn(rows, vocabulary, generator=torch.Generator().manual_seed(0)) * 4
    probs = torch.softmax(logits / 0.8, dim=-1)
    out = {}
    for name, sampler in (("sort_and_multinomial", sort_and_multinomial), ("nucleus_sample", nucleus_sample)):
        times = []
        for _ in range(repeats):
            generators = [torch.Generator().manual_seed(i) for i in range(rows)]
            start = time.perf_counter()
            sampler(probs, 0.92, generators)
            times.append(1e3 * (time.perf_counter() - start))
        out[name] = round(statistics.median(times), 1)
    return out


def measure(config: SimConfig, world, dtype: str, batch_size: int, threads: int, reference_sampler: bool,
            reuse_prompts: bool = True) -> dict:
    writer = ChatLineWriter(None, batch_size=batch_size, threads=threads, dtype=dtype, reuse_prompts=reuse_prompts)
    writer.load()
    if reference_sampler:
        import torch

        writer._pick = lambda logits, generators: sort_and_multinomial(
            torch.softmax(logits / writer.sampling.temperature, dim=-1), writer.sampling.top_p, generators)
    with tempfile.TemporaryDirectory() as cache:
        start = time.perf_counter()
        splits, extra = build_corpus(config, world, Path(cache) / "lines.jsonl", writer)
        seconds = time.perf_counter() - start
    cost, speech = writer.cost, extra["speech"]
    lines = [turn.speech for episodes in splits.values() for episode in episodes for turn in episode.turns]
    return {
        "dtype": dtype, "batch_size": batch_size, "sampler": "sort" if reference_sampler else "nucleus",
        "reuse_prompts": reuse_prompts, "reused_tokens": cost["reused_tokens"],
        "lines": len(lines), "completions": writer.prompts_done,
        "seconds": round(seconds, 2), "seconds_per_line": round(seconds / max(len(lines), 1), 3),
        "prompt_tokens": cost["prompt_tokens"], "prefill_s": round(cost["prefill_s"], 2),
        "prefill_tokens_per_s": round((cost["prompt_tokens"] - cost["reused_tokens"]) / max(cost["prefill_s"], 1e-9), 1),
        "decode_steps": cost["decode_steps"], "decode_s": round(cost["decode_s"], 2),
        "decode_ms_per_step": round(1e3 * cost["decode_s"] / max(cost["decode_steps"], 1), 1),
        "new_tokens": cost["new_tokens"], "retried": speech["retried"], "fallbacks": speech["fallbacks"],
        "text": lines,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chats", type=int, default=6, help="test chats whose speech each variant writes")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--variants", default="float32:16,bfloat16:16,bfloat16:64",
                        help="comma-separated dtype:batch_size pairs; the first is the reference")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = parser.parse_args()

    config = SimConfig.preset("tiny", train=0, valid=0, test=args.chats, test_unseen=0, speech="llm")
    world = load_world(None, config.world)
    results = []
    for variant in args.variants.split(","):
        dtype, batch, *flags = variant.split(":")
        unknown = set(flags) - {"sort", "noreuse"}
        if unknown:
            parser.error(f"unknown variant flag(s) {sorted(unknown)} in {variant!r}; known: sort, noreuse")
        result = measure(config, world, dtype, int(batch), args.threads, "sort" in flags, "noreuse" not in flags)
        reference = results[0]["text"] if results else result["text"]
        result["same_lines_as_reference"] = sum(a == b for a, b in zip(result["text"], reference))
        results.append(result)
        print(f"{variant}: {result['seconds_per_line']} s/line, prefill {result['prefill_tokens_per_s']} "
              f"tok/s, decode {result['decode_ms_per_step']} ms/step", flush=True)
    reference = results[0]["seconds_per_line"]
    for result in results:
        result["speedup"] = round(reference / result["seconds_per_line"], 2)
        result["examples"] = result.pop("text")[:3]
    summary = {"benchmark": "light_sim_llm", "machine": platform.processor() or platform.machine(),
               "threads": args.threads, "chats": args.chats, "variants": results,
               "sampler_ms": time_samplers(vocabulary=49152),
               "median_seconds_per_line": statistics.median(r["seconds_per_line"] for r in results)}
    if args.json:
        print(json.dumps(summary))


if __name__ == "__main__":
    main()
