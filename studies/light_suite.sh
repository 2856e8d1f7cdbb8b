#!/usr/bin/env bash
# Train and test the LIGHT neural rankers behind docs/light.md Tables 4 and 5 as parallel jobs on one
# machine: the bi- and cross-ranker on the three tasks, a bi-ranker with two encoders beside
# the shared one, and the bi-ranker's grounding ablations on a fixed slice of dialogue
# training data. The small encoders leave a GPU mostly idle, so jobs share it (and the CPU
# cores tokenise for them); each job trains for at most $TRAIN_TIME, then tests and exports.
#
#   studies/light_suite.sh OUT_DIR [JOB ...]          # default: every job below
#
# Environment: SIM_DIR (a LIGHT-sim corpus, e.g. runs/light-sim-full), TRAIN_TIME (Lightning
# max_time, default 00:00:04:40), DEADLINE (seconds after which unfinished jobs are stopped,
# default 540), EXTRA (overrides added to every job, e.g. "data.limit=64" for a smoke test),
# PYTHON (default python). Each job writes OUT_DIR/runs/NAME/results.json and OUT_DIR/logs/NAME.log.
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0;; esac
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: studies/light_suite.sh OUT_DIR [JOB ...]}"; shift
: "${SIM_DIR:?set SIM_DIR to a LIGHT-sim corpus directory}"
train_time="${TRAIN_TIME:-00:00:04:40}"
deadline="${DEADLINE:-540}"
python="${PYTHON:-python}"

# name | recipe | overrides
jobs_table="
bi-dialogue|light_bi|data.task=dialogue model.options.shared_encoder=true data.batch_size=64 data.limit.valid=2000
bi-dialogue-two-encoders|light_bi|data.task=dialogue model.options.shared_encoder=false data.batch_size=64 data.limit.valid=2000
bi-action|light_bi|data.task=action model.options.shared_encoder=true data.batch_size=64 trainer.max_epochs=3
bi-emote|light_bi|data.task=emote model.options.shared_encoder=true data.batch_size=64 trainer.max_epochs=3
cross-dialogue|light_cross|data.task=dialogue data.batch_size=16 data.limit.valid=1000 data.limit.test=2000 data.limit.test_unseen=2000
cross-action|light_cross|data.task=action data.batch_size=16 trainer.max_epochs=2
cross-emote|light_cross|data.task=emote data.batch_size=16 trainer.max_epochs=2
"
ablation_slice="data.task=dialogue model.options.shared_encoder=true data.batch_size=64 data.limit.train=15000 data.limit.valid=1000 data.limit.test=3000 data.limit.test_unseen=3000 trainer.max_epochs=1"
for features in all dialogue dialogue_persona dialogue_setting dialogue_objects; do
  jobs_table+="ablate-$features|light_bi|$ablation_slice data.features=$features
"
done

common="data.sim_dir=$SIM_DIR data.num_workers=2 threads=2 logger.kind=csv checkpoint.every_n_train_steps=1000000
trainer.max_time=$train_time trainer.log_every_n_steps=50 trainer.enable_progress_bar=false"
if "$python" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  common+=" trainer.accelerator=gpu trainer.precision=bf16-mixed"
fi

mkdir -p "$out/runs" "$out/logs"
pids=()
while IFS='|' read -r name recipe overrides; do
  [ -z "$name" ] && continue
  if [ $# -gt 0 ] && [[ " $* " != *" $name "* ]]; then continue; fi
  # shellcheck disable=SC2086  # overrides are whitespace-separated key=value words
  timeout --signal=TERM --kill-after=15 "$deadline" "$python" "recipes/$recipe.py" $common $overrides ${EXTRA:-} \
    run_dir="$out/runs/$name" > "$out/logs/$name.log" 2>&1 &
  pids+=("$!")
  echo "started $name (pid $!)"
done <<< "$jobs_table"

status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
for results in "$out"/runs/*/results.json; do
  [ -f "$results" ] && echo "$results: $(tr -d '\n ' < "$results" | head -c 600)"
done
exit $status
