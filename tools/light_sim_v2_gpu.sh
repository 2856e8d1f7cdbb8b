#!/usr/bin/env bash
# Write LIGHT-sim v2 lines on a lent GPU (the `device` tool's machine), several shards side by
# side, into line-cache files that come back and join runs/light-sim-v2-lines (issue 16).
#
# Why: on this project's CPUs one writer does 0.45 (AVX2, float32) to 1.6 (AVX512-BF16,
# bfloat16) lines/s, so the full corpus at 0.9 (~140,000 lines) takes tens of core-hours.
# Lines written on a GPU in bfloat16 differ from the CPU's bfloat16 lines by rounding only and
# share their cache identity (zoo.light.llm_writer.ChatLineWriter, `device`).
#
# Why three steps: a device call sends the working tree, at most 64 MiB, and the model file
# alone is 98 MB; so the model travels in two halves, in two calls made back to back (the
# machine stays warm ~30 s between calls; /tmp survives while it does). Move the large tracked
# folders (checkpoints/, carried/) out of the checkout for the two calls, and back after.
#
#   here:   tools/light_sim_v2_gpu.sh pack 1/8 2/8 3/8 5/8 6/8 7/8   # .gpu-a: half 1, world, gguf wheel; .gpu-b: half 2; the shards' caches in either
#   device: run(carry=[".gpu-a"], command="tools/light_sim_v2_gpu.sh stage")
#   device: run(carry=[".gpu-b"], command="tools/light_sim_v2_gpu.sh write 420 1/8 2/8 3/8 5/8 6/8 7/8")
#   here:   tools/light_sim_v2_gpu.sh unpack /work/.device/...   # append the returned lines to the caches
#
# `write SECONDS SHARD...` runs one writer per shard until SECONDS have passed (then SIGTERM:
# each line is appended to its shard's file as its turn finishes, so a stopped writer loses at
# most one turn), with the settings of tools/light_sim_v2.sh at 0.9 (full preset). A dry run
# here, on the CPU: `OUT=/tmp/out DEVICE=cpu DTYPE=float32 PYTHON=python tools/light_sim_v2_gpu.sh write 150 0/512`
# after `stage` with the same PYTHON.
set -euo pipefail
step="${1:?pack | stage | write SECONDS SHARD... | unpack DIR}"; shift
lines=runs/light-sim-v2-lines
stage=/tmp/zoo-gpu
source "$(dirname "$0")/device_halves.sh"

pack() {
    python="${PYTHON:-python}"
    model=$("$python" -P -c "from zoo.light.llm_writer import default_model_path; print(default_model_path())")
    rm -rf .gpu-a .gpu-b && mkdir -p .gpu-a/data .gpu-b/lines
    split_halves "$model" model
    cp -r "${ZOO_DATA_DIR:?set ZOO_DATA_DIR}/light" .gpu-a/data/
    cp .whl/gguf-*.whl .gpu-a/ 2>/dev/null || PYTHON="$python" device_wheel .gpu-a gguf==0.19.0
    # Each call may send 64 MiB with the tracked tree: the shards' line files go in whichever
    # half still has room (stage and write gather both into $stage/lines).
    mkdir -p .gpu-a/lines
    limit=$(( 64 * 1024 * 1024 - $(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -n 1 | cut -f1) - 512 * 1024 ))
    for shard in "$@"; do  # those begun on CPUs resume from their lines, in either precision: a
      for dtype in bfloat16 float32; do  # line rewritten at the other would fork its chat from there
        file="$lines/smollm2-$dtype.shard-${shard/\//-of-}.jsonl"
        [ -f "$file" ] || continue
        size=$(stat -c %s "$file")
        if [ $(( $(du -sb .gpu-a | cut -f1) + size )) -le "$limit" ]; then cp "$file" .gpu-a/lines/
        elif [ $(( $(du -sb .gpu-b | cut -f1) + size )) -le "$limit" ]; then cp "$file" .gpu-b/lines/
        else echo "no room for $file in either call (64 MiB each): pack fewer shards" >&2; exit 1; fi
      done
    done
    du -sb .gpu-a .gpu-b; echo "limit per call, less the tracked tree: $limit bytes"
}

stage() {
    python="${PYTHON:-python3}"
    mkdir -p "$stage"
    cp .gpu-a/model.part-a "$stage/"
    cp -r .gpu-a/data .gpu-a/lines "$stage/"
    "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$stage/site" .gpu-a/gguf-*.whl
    export PYTHONPATH="$PWD:$stage/site" ZOO_DATA_DIR="$stage/data"
    "$python" -c "import torch, transformers, gguf, importlib.metadata as m; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), \
'transformers', transformers.__version__, 'gguf', m.version('gguf'))"
    "$python" -P -m zoo.cli light sim --out "$stage/check" --preset tiny | tail -n 1  # world and simulator
    "$python" -m pytest -q -p no:cacheprovider tests/test_light_sim_v2.py -k "gpu or device" 2>&1 | tail -n 3
}

write() {
    python="${PYTHON:-python3}"
    seconds="${1:?seconds to write}"; shift
    model=$(join_halves "$stage" model)
    mkdir -p "$stage/lines" && cp .gpu-b/lines/*.jsonl "$stage/lines/" 2>/dev/null || true
    export PYTHONPATH="$PWD:$stage/site" ZOO_DATA_DIR="$stage/data" HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
    out="${OUT:?set OUT, the folder the lines go to}"
    gpu_use >> "$out/writers.log" 2>&1 &
    monitor=$!
    pids=()
    for shard in "$@"; do
      timeout -s TERM "$seconds" "$python" -P -m zoo.cli light sim --out "$stage/unused-${shard/\//-of-}" --preset full \
        --speech llm --speech-model "$model" --speech-dtype "${DTYPE:-bfloat16}" --speech-device "${DEVICE:-cuda}" \
        --speech-batch-size 256 --line-cache "$out/smollm2-bfloat16.jsonl" \
        --read-lines "$stage/lines/smollm2-bfloat16.jsonl" --read-lines "$stage/lines/smollm2-float32.jsonl" \
        --speech-temperature 0.9 --speech-top-p 0.92 \
        --speech-shard "$shard" --threads 2 2>&1 | grep --line-buffered -v "de-quantizing\|Loading weights" \
        | sed -u "s|^|[$shard] |" >> "$out/writers.log" &
      pids+=($!)
    done
    wait "${pids[@]}" || true
    kill "$monitor" 2>/dev/null || true
    wc -l "$out"/*.jsonl | tee -a "$out/writers.log"
}

unpack() {
    back="${1:?the folder the files came back to}"
    for file in "$back"/smollm2-bfloat16.shard-*-of-8.jsonl; do
      [ -s "$file" ] || continue
      complete=$(grep -c '' "$file"); torn=$(tail -c 1 "$file" | od -An -c | tr -d ' ')
      # A line cut by the SIGTERM has no newline: drop it (the writer resumes it later).
      if [ "$torn" != '\n' ]; then complete=$((complete - 1)); fi
      head -n "$complete" "$file" >> "$lines/$(basename "$file")"
      echo "$(basename "$file"): +$complete lines"
    done
}

gpu_use() {  # the GPU's use once a minute, beside the writers' progress
  while sleep 60; do nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader || true; done
}

case "$step" in
  pack|stage|write|unpack) "$step" "$@" ;;
  *) echo "unknown step $step: pack | stage | write SECONDS SHARD... | unpack DIR" >&2; exit 2 ;;
esac
