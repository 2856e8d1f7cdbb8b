#!/usr/bin/env bash
# Build a LIGHT-sim v2 corpus, resumable:
#   tools/light_sim_v2.sh small runs/light-sim-v2-small
#   tools/light_sim_v2.sh full  runs/light-sim-v2-full
# The precision is the machine's fastest: bfloat16 at batch 64 where the CPU has AVX512-BF16 or
# AMX (0.73 s a line, 2.5x float32 at batch 16, measured by benchmarks/light_sim_llm.py),
# float32 at batch 16 where it has neither (AVX2 only: 1.37 s a line, bfloat16 ~9.5 s; int8,
# SPEECH_DTYPE=int8, runs 1.7x faster but writes shorter lines: docs/light_sim_v2.md). A corpus
# takes lines written in float32 or bfloat16 from the cache (ChatLineWriter.other_precisions), so
# writers on different machines add to one corpus. Every written line is appended to the line
# cache as it comes, so relaunching the same command after an interruption asks the model
# only for the lines still missing; the corpus directory is written once, at the end. The line
# cache lives under runs/ (runs/light-sim-v2-lines/, shared by the presets: the full corpus
# reuses the small one's lines).
# Both cores on one corpus: two shards at once, then the same command unsharded writes the corpus
# from their lines without calling the model:
#   tools/light_sim_v2.sh full runs/light-sim-v2-full --speech-shard 0/2
#   tools/light_sim_v2.sh full runs/light-sim-v2-full --speech-shard 1/2
# Assemble in the precision the shard writers ran (where both precisions hold a line for one
# prompt, that one's is the line each chat went on from; the other order forks chats and the model
# writes them again), and from the caches alone, so a mismatch stops at once with the chat it forks:
#   SPEECH_DTYPE=bfloat16 tools/light_sim_v2.sh full runs/light-sim-v2-full --cache-only
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0;; esac
set -euo pipefail
preset="$1"; out="$2"; shift 2
python="${PYTHON:-python}"
lines=runs/light-sim-v2-lines
dtype="${SPEECH_DTYPE:-}"   # override: SPEECH_DTYPE=float32|bfloat16|int8
if [ -z "$dtype" ]; then
  dtype=float32  # not int8 on AVX2: 1.7x faster, but its lines are shorter and IR lower (docs/light_sim_v2.md)
  if grep -qwE "avx512_bf16|amx_bf16" /proc/cpuinfo 2>/dev/null; then dtype=bfloat16; fi
fi
batch=16
if [ "$dtype" = bfloat16 ]; then batch=64; fi
precision=(--speech-dtype "$dtype" --speech-batch-size "$batch" --line-cache "$lines/smollm2-$dtype.jsonl")
if [ "${READ_OTHER_PRECISIONS:-1}" = 1 ]; then  # 0: only this precision's own lines (to compare precisions)
  for other in float32 bfloat16; do  # the writer takes them only where they may mix (ChatLineWriter.other_precisions)
    if [ "$other" != "$dtype" ] && [ -f "$lines/smollm2-$other.jsonl" ]; then
      precision+=(--read-lines "$lines/smollm2-$other.jsonl")
    fi
  done
fi
exec "$python" -P -m zoo.cli light sim --out "$out" --preset "$preset" --speech llm "${precision[@]}" --threads 1 --json "$@"
