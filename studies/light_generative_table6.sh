#!/usr/bin/env bash
# The generative transformer's Table 6 (Urbanek et al. 2019) on a fixed data budget: the seven
# grounding rows of the paper x dialogue / action / emote, from scratch (the paper's emote model
# had no pretraining either), one pass over the first TRAIN training examples of LIGHT-sim.
#   studies/light_generative_table6.sh runs/light-sim-full 8000
# Runs go to runs/light/table6-TRAIN/<task>-<features>/ and resume; a finished one
# (results.json) is skipped, so relaunching continues the table. Dialogue rows first.
# studies/light_table6.py runs/light/table6-TRAIN prints the table. Unigram F1 is measured on the
# first 200 examples of each evaluated split (beam 5; on 64 its interval is +-5 points).
# TASKS="action emote" studies/light_generative_table6.sh ... trains only those tasks' rows, and
# FEATURES="dialogue_objects" only those groundings (two jobs on two cores must not share a row).
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0;; esac
set -euo pipefail
sim="$1"; train="${2:-8000}"; shift $(( $# < 2 ? $# : 2 ))
here="$(cd "$(dirname "$0")/.." && pwd)"
python="${PYTHON:-python}"
out="runs/light/table6-$train"
limit="{train: $train, valid: 200, test: 500, test_unseen: 500}"
for task in ${TASKS:-dialogue action emote}; do
  for features in ${FEATURES:-all actions_emotes dialogue dialogue_action_emote dialogue_persona dialogue_setting dialogue_objects}; do
    run="$out/$task-$features"
    [ -f "$run/results.json" ] && continue
    "$python" "$here/recipes/light_generative.py" data.sim_dir="$sim" "data.limit=$limit" data.task="$task" \
      data.features="$features" model.options.start=scratch model.options.validation_generations=200 \
      trainer.max_epochs=1 trainer.val_check_interval=1.0 threads=1 export=false run_dir="$run" "$@"
  done
done
