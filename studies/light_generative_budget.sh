#!/usr/bin/env bash
# The two starting points of the generative transformer on one data budget: the
# first TRAIN dialogue examples of LIGHT-sim, one pass, then valid/test on the first examples.
#   studies/light_generative_budget.sh runs/light-sim-full 24000
# Each run resumes from its run directory; a finished one (results.json: ppl, word_ppl, f1,
# r_at_1) is skipped.
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0;; esac
set -euo pipefail
sim="$1"; train="${2:-24000}"; shift $(( $# < 2 ? $# : 2 ))
here="$(cd "$(dirname "$0")/.." && pwd)"
python="${PYTHON:-python}"
limit="{train: $train, valid: 200, test: 300, test_unseen: 300}"
common=(data.sim_dir="$sim" "data.limit=$limit" trainer.max_epochs=1 trainer.val_check_interval=1.0 threads=1)
scratch="runs/light/gen-budget-scratch-$train" minilm="runs/light/gen-budget-minilm-$train"
[ -f "$scratch/results.json" ] || "$python" "$here/recipes/light_generative.py" "${common[@]}" \
  model.options.start=scratch run_dir="$scratch" "$@"
[ -f "$minilm/results.json" ] || "$python" "$here/recipes/light_generative.py" "${common[@]}" \
  model.options.start=minilm model.options.learning_rate=1e-4 run_dir="$minilm" "$@"
