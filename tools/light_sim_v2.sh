#!/usr/bin/env bash
# Build a LIGHT-sim v2 corpus in the background from frozen code (issue 16), resumable:
#   tools/launch_run.sh sim-v2-small tools/light_sim_v2.sh small runs/light-sim-v2-small
#   tools/launch_run.sh sim-v2-full  tools/light_sim_v2.sh full  runs/light-sim-v2-full
# bfloat16 at batch 64 on one thread (2.5x float32's speed at batch 16 on this CPU, measured by
# benchmarks/light_sim_llm.py; its own cache key). Every written line is appended to the line
# cache as it comes, so relaunching the same command after an interruption asks the model
# only for the lines still missing; the corpus directory is written once, at the end. The line
# cache lives under runs/ (runs/light-sim-v2-lines/, shared by the presets: the full corpus
# reuses the small one's lines), so tools/carry_runs.py can carry it to the next session.
# Both cores on one corpus: two shards at once, then the same command unsharded writes the corpus
# from their lines without calling the model:
#   tools/launch_run.sh sim-v2-full-0 tools/light_sim_v2.sh full runs/light-sim-v2-full --speech-shard 0/2
#   tools/launch_run.sh sim-v2-full-1 tools/light_sim_v2.sh full runs/light-sim-v2-full --speech-shard 1/2
set -euo pipefail
preset="$1"; out="$2"; shift 2
python="${PYTHON:-python}"
exec "$python" -m zoo.cli light sim --out "$out" --preset "$preset" --speech llm --speech-dtype bfloat16 \
  --speech-batch-size 64 --threads 1 --line-cache runs/light-sim-v2-lines/smollm2-bfloat16.jsonl --json "$@"
