#!/usr/bin/env bash
# Start a long training run in the background from a frozen copy of the committed code, so
# that editing the working tree cannot change a run halfway (Python imports lazily).
#   tools/launch_run.sh <run-name> recipes/blocks_policy.py key=value ...
#   tools/launch_run.sh <run-name> tools/blocks_seed.sh 0          # a shell pipeline of recipes
# Log: runs/logs/<run-name>-<time>.log; code: runs/code/<commit>/
# A shell recipe that runs a module must call it as `python -P -m zoo...`: plain `-m` puts the
# working directory (the live tree) ahead of PYTHONPATH, so the run would not use the frozen copy.
set -euo pipefail
cd "$(dirname "$0")/.."
name="$1"; recipe="$2"; shift 2
commit="$(git rev-parse --short HEAD)"
code="runs/code/$commit"
if [ ! -d "$code" ]; then mkdir -p "$code" && git archive HEAD | tar -x -C "$code"; fi
mkdir -p runs/logs
log="runs/logs/$name-$(date +%Y%m%d-%H%M%S).log"
python="${PYTHON:-python}"
[ -x .venv/bin/python ] && [ -z "${PYTHON:-}" ] && python="$PWD/.venv/bin/python"  # the project's venv when there is one
runner=("$python"); case "$recipe" in *.sh) runner=(bash) ;; esac
PYTHONPATH="$PWD/$code" PYTHON="$python" ZOO_DATA_DIR="${ZOO_DATA_DIR:-$(cd .. && pwd)/shared/data}" \
  WANDB_MODE="${WANDB_MODE:-offline}" nohup "${runner[@]}" "$code/$recipe" "$@" > "$log" 2>&1 &
echo "started $name (pid $!, code $commit), log $log"
