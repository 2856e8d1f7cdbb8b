#!/usr/bin/env bash
# The test of LIGHT-sim v2: one bi-ranker trained on the same budget of each corpus,
# then both on the real fixture against IR and against each other (paired intervals).
#   studies/light_v2_retrain.sh runs/light-sim-full runs/light-sim-v2-small 10000
# Runs go to runs/light/v2-retrain-N/{v1,v2}/ and resume (a finished one is skipped); the
# comparisons are written to runs/light/v2-retrain-N/fixture-*.json. Speed on one CPU core: 0.9
# examples/s with each example's own 19 distractors, 1.8 with the batch's golds only
# (model.options.own_negatives=false, the cheap step ParlAI's bi-encoders train with). To use
# both cores, run the two recipe commands below at once, then this script: it
# skips a finished run and writes the comparisons. NAMES="v1 v2b" names the two runs otherwise
# (default "v1 v2"), so a second v2 corpus gets its own run beside the first's. RECIPE=light_starspace
# (or light_memnet) trains that model instead, into runs/light/v2-retrain-N-RECIPE/ (its own epochs:
# pass trainer.max_epochs=K after the three arguments; a later override wins).
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0;; esac
set -euo pipefail
v1="$1"; v2="$2"; train="${3:-10000}"; shift $(( $# < 3 ? $# : 3 ))
here="$(cd "$(dirname "$0")/.." && pwd)"
python="${PYTHON:-python}"
recipe="${RECIPE:-light_bi}"
out="runs/light/v2-retrain-$train"; [ "$recipe" = light_bi ] || out+="-$recipe"
limit="{train: $train, valid: 300, test: 500, test_unseen: 500}"
read -r first second <<< "${NAMES:-v1 v2}"
for corpus in "$first" "$second"; do
  sim="$v1"; [ "$corpus" = "$second" ] && sim="$v2"
  [ -f "$out/$corpus/results.json" ] || "$python" "$here/recipes/$recipe.py" data.sim_dir="$sim" "data.limit=$limit" \
    data.task=dialogue trainer.max_epochs=1 threads=1 run_dir="$out/$corpus" "$@"
done
for corpus in "$first" "$second"; do
  "$python" -P -m zoo.cli eval light --source fixture --model "$out/$corpus/pretrained" --versus ir --json \
    | tail -n 1 > "$out/fixture-$corpus-vs-ir.json"
done
"$python" -P -m zoo.cli eval light --source fixture --model "$out/$second/pretrained" --versus "$out/$first/pretrained" \
  --json | tail -n 1 > "$out/fixture-$second-vs-$first.json"
echo "wrote $out/fixture-*.json"
