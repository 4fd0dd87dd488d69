#!/usr/bin/env bash
# Reproduces the README's figures in one run on this machine: builds the random real-shape model
# if needed and runs every `mineru-cpp bench` workload. Prints one JSON object per line.
# Usage: bash scripts/bench.sh [MODEL_DIR] [THREADS] [page]   (defaults: /tmp/mineru-random, all cores)
# With `page`: issue 18's table instead: the machine's peaks, then for each weight format the ViT
# on one 1036x1036 image with its per-op profile and the page workload (bench/page_workload.json);
# bf16 runs MODEL_DIR as stored, q8 and q4 pre-quantized copies in MODEL_DIR-q8 / MODEL_DIR-q4
# (written once with `quantize`, mapped at load).
set -euo pipefail
cd "$(dirname "$0")/.."
B=./build/src/cli/mineru-cpp
M="${1:-/tmp/mineru-random}"
T="${2:-$(nproc)}"
[ -f "$M/model.safetensors" ] || "$B" gen-model --preset mineru2.5 -o "$M"
run() { echo "$("$B" bench --model "$M" --threads "$T" --json "$@")"; }
if [ "${3:-}" = page ]; then
  for q in q8 q4; do
    [ -f "$M-$q/model.safetensors" ] || "$B" quantize --model "$M" --quant "$q" -o "$M-$q" >&2
  done
  "$B" bench --workload peak --threads "$T" --json
  for q in bf16 q8 q4; do
    dir="$M"
    [ "$q" = bf16 ] || dir="$M-$q"
    "$B" bench --model "$dir" --quant "$q" --workload vision --profile --threads "$T" --json
    "$B" bench --model "$dir" --quant "$q" --workload page --threads "$T" --json
  done
  exit 0
fi
for q in bf16 q8 q4; do run --workload decode --quant "$q"; done
run --workload decode --quant q8 --concurrency 16
run --workload decode --quant q8 --concurrency 32
for q in bf16 q8 q4; do run --workload prefill --quant "$q"; done
"$B" bench --model "$M" --threads 1 --json --workload prefill --quant q8
for q in bf16 q8; do run --workload vision --quant "$q"; done
"$B" bench --model "$M" --threads 1 --json --workload vision --quant bf16
for q in q8 q4; do run --workload accuracy --quant "$q"; done
run --workload chat --quant q8
run --workload page --quant q8
