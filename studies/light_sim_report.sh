#!/usr/bin/env bash
# What the LIGHT-sim v2 goals asks of a LIGHT-sim corpus (v1 or v2), as JSON lines in OUT (one per line):
# Table 1 statistics with the copying rates, then IR's R@1/20 on test seen with a bootstrap
# interval for ParlAI's default features and the four grounding ablations (the IR proxy for
# Table 5's order).
#   studies/light_sim_report.sh runs/light-sim-v2-small docs/results/light_sim_v2_small_report.jsonl
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0;; esac
set -euo pipefail
sim="$1"; out="$2"
python="${PYTHON:-python}"
mkdir -p "$(dirname "$out")"
: > "$out"
"$python" -P -m zoo.cli light stats --source sim --sim-dir "$sim" --json | tail -n 1 >> "$out"
for features in parlai_default no_persona no_setting no_objects dialogue; do
  "$python" -P -m zoo.cli eval light --model ir --source sim --sim-dir "$sim" --split test --features "$features" \
    --bootstrap 1000 --json | tail -n 1 >> "$out"
done
echo "wrote $(wc -l < "$out") records to $out"
