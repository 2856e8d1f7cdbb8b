#!/usr/bin/env bash
# One seed of the paper's Blocks experiment (docs/blocks_environment.md §6.4), resumable at any point:
#   1. supervised initialisation: 2 epochs on demonstrations, one Adam step per episode on 32
#      draws from the last 2,000 steps, the original's initialisation;
#   2. the contextual bandit with F1+F2 shaping from that start (direction head re-initialised),
#      up to 30 epochs, the model of every epoch kept and the best by tuning error exported.
# Run it:
#   tools/blocks_seed.sh 0 [extra bandit overrides]
# Each stage resumes from its run directory's last.ckpt, so relaunching the same command after
# any interruption continues where it stopped. Needs $ZOO_DATA_DIR/blocks (the real data).
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0;; esac
set -euo pipefail
seed="$1"; shift
here="$(cd "$(dirname "$0")/.." && pwd)"
python="${PYTHON:-python}"
runs="${ZOO_RUNS:-runs/blocks}"
warmup="$runs/sup-orig-s$seed"
# The supervised start is needed only until the bandit has a last.ckpt of its own.
if [ ! -f "$warmup/checkpoints/epoch001.ckpt" ] && [ ! -f "$runs/bandit-s$seed/checkpoints/last.ckpt" ]; then
  "$python" "$here/recipes/blocks_policy.py" model.name=blocks-supervised data.source=real data.supervised_schedule=replay \
    model.options.init=original trainer.max_epochs=2 threads=1 seed="$seed" run_dir="$warmup" evaluation.gifs=0
fi
"$python" "$here/recipes/blocks_policy.py" model.name=blocks-bandit data.source=real threads=1 seed="$seed" \
  start.init_from="$warmup/checkpoints/epoch001.ckpt" trainer.max_epochs=30 run_dir="$runs/bandit-s$seed" "$@"
