#!/usr/bin/env bash
# The Table 5 check on a LIGHT-sim v2 corpus with trained rankers: one bi-ranker per
# grounding set, the "Before and after" recipe and budget (dialogue, one epoch, batch 16, the
# batch's golds as negatives), run one after another on one core; a finished run is skipped.
#   studies/light_v2_ablations.sh runs/light-sim-v2-t09-full 6000 dialogue dialogue_persona
#   studies/light_v2_ablations.sh runs/light-sim-v2-t09-full 6000 dialogue_setting dialogue_objects
# Runs go to runs/light/v2-ablation-N/<features>/; "all" is ParlAI's default text, the same run
# as studies/light_v2_retrain.sh's at that budget. Score each on one test slice with its own
# grounding: `zoo eval light --source sim --sim-dir SIM --split test --limit 2000 --features F
# --model RUN/pretrained --bootstrap 1000`; two of them case by case, with a paired interval:
# `... --features dialogue_objects --model RUN_O/pretrained --versus RUN_D/pretrained --versus-features dialogue`.
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0;; esac
set -euo pipefail
sim="$1"; train="$2"; shift 2
here="$(cd "$(dirname "$0")/.." && pwd)"
python="${PYTHON:-python}"
out="runs/light/v2-ablation-$train"
for features in "$@"; do
  [ -f "$out/$features/results.json" ] || "$python" "$here/recipes/light_bi.py" data.sim_dir="$sim" \
    "data.limit={train: $train, valid: 300, test: 500, test_unseen: 500}" data.task=dialogue data.features="$features" \
    trainer.max_epochs=1 threads=1 model.options.own_negatives=false run_dir="$out/$features"
done
