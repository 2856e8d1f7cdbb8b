#!/usr/bin/env bash
# Short bandit runs on one budget from one supervised start, each ending with the STOP probe:
# which setting keeps the policy's STOP alive, and what that does to the tuning error.
#   studies/blocks_stop_study.sh default
#   studies/blocks_stop_study.sh keep-head --reset-direction-head 0
# The name is the first argument; the rest go to studies/blocks_bandit_schedule.py (after the
# recipe's defaults: rollouts of 16, 4 episodes per update). Results: runs/blocks/stop-study/
# <name>.jsonl (the curve) and probe.jsonl (one line per finished run). A finished run is skipped.
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0;; esac
set -euo pipefail
name="$1"; shift
here="$(cd "$(dirname "$0")/.." && pwd)"
python="${PYTHON:-python}"
start="${START:-runs/blocks/sup-orig-s1/checkpoints/epoch001.ckpt}"
out="runs/blocks/stop-study"
mkdir -p "$out"
[ -f "$out/$name/model.safetensors" ] && { echo "$name: done already"; exit 0; }
rm -f "$out/$name.jsonl"  # an interrupted run starts over: these runs take minutes
"$python" "$here/studies/blocks_bandit_schedule.py" --init-from "$start" --episodes "${EPISODES:-2400}" \
  --episodes-per-update 4 --eval-every 400 --seed "${SEED:-1}" --out "$out/$name.jsonl" --save "$out/$name" "$@"
"$python" "$here/studies/blocks_stop_probe.py" "$out/$name" --limit 400 --json | sed "s/^{/{\"run\": \"$name\", /" >> "$out/probe.jsonl"
