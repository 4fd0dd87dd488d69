#!/usr/bin/env bash
# Reproduces the README's figures in one run on this machine: builds the random real-shape model
# if needed and runs every `mineru-cpp bench` workload. Prints one JSON object per line.
# Usage: bash scripts/bench.sh [MODEL_DIR] [THREADS]   (defaults: /tmp/mineru-random, all cores)
set -euo pipefail
cd "$(dirname "$0")/.."
B=./build/src/cli/mineru-cpp
M="${1:-/tmp/mineru-random}"
T="${2:-$(nproc)}"
[ -f "$M/model.safetensors" ] || "$B" gen-model --preset mineru2.5 -o "$M"
run() { echo "$("$B" bench --model "$M" --threads "$T" --json "$@")"; }
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
