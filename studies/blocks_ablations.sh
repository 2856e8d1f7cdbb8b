#!/usr/bin/env bash
# The paper's Table 2 ablations under the default schedule, from seed 1's supervised start
# (runs/blocks/sup-orig-s1, tools/blocks_seed.sh 1; w/o previous action from its own, trained
# here the same way), so each row compares with seed 1's own
# bandit run (runs/blocks/bandit-s1: dev 4.352 / 4.487 after bandit epochs 1 / 2):
#   studies/blocks_ablations.sh [extra overrides]
# Two bandit epochs per row (EPOCHS=...), one row after another, each resumable; a finished row
# (its pretrained/ export) is skipped, so relaunching continues the table. ROWS="f1 reinforce"
# runs only those rows. Each row's metrics.jsonl holds its per-epoch tuning and dev errors.
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0;; esac
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
python="${PYTHON:-python}"
runs="${ZOO_RUNS:-runs/blocks}"
start="$runs/sup-orig-s1/checkpoints/epoch001.ckpt"
declare -A ROW=(
  [f1]="model.name=blocks-bandit model.options.reward=f1"            # w/o F2 (distance shaping only)
  [f2]="model.name=blocks-bandit model.options.reward=f2"            # w/o F1 (demonstration advice only)
  [problem]="model.name=blocks-bandit model.options.reward=problem"  # w/o F1 and F2 (the problem reward alone)
  [distance]="model.name=blocks-bandit model.options.reward=distance" # a plain distance reward instead of F1+F2
  [reinforce]="model.name=blocks-reinforce"                           # REINFORCE, reward-to-go, same start
  [no-supervised-init]="model.name=blocks-bandit start.warmup_epochs=0"
  [no-previous-action]="model.name=blocks-bandit model.options.use_previous_action=false"   # its own supervised start, below
  [dqn]="model.name=blocks-dqn"
)
for row in ${ROWS:-f1 f2 problem reinforce distance no-supervised-init no-previous-action dqn}; do
  run="$runs/ablation-$row"
  [ -f "$run/pretrained/model.safetensors" ] && continue
  overrides=(${ROW[$row]})
  case "$row" in
    no-supervised-init|dqn) ;;
    no-previous-action)  # the network differs, so it needs a supervised start of its own (seed 1, ~1.2 h)
      warmup="$runs/sup-orig-s1-noprev"
      if [ ! -f "$warmup/checkpoints/epoch001.ckpt" ] && [ ! -f "$run/checkpoints/last.ckpt" ]; then
        "$python" "$here/recipes/blocks_policy.py" model.name=blocks-supervised data.source=real \
          data.supervised_schedule=replay model.options.init=original model.options.use_previous_action=false \
          trainer.max_epochs=2 threads=1 seed=1 \
          run_dir="$warmup" evaluation.gifs=0
      fi
      overrides+=("start.init_from=$warmup/checkpoints/epoch001.ckpt") ;;
    *) overrides+=("start.init_from=$start") ;;
  esac
  "$python" "$here/recipes/blocks_policy.py" data.source=real threads=1 seed=1 "${overrides[@]}" \
    trainer.max_epochs="${EPOCHS:-2}" run_dir="$run" evaluation.gifs=0 "$@"
done
