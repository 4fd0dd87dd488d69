#!/usr/bin/env bash
# Issue 18's table in one run: for each weight format, the ViT on one 1036x1036 image with its
# per-op profile and the page workload (bench/page_workload.json), plus the machine's peaks.
# bf16 runs the random real-shape model as stored; q8 and q4 run pre-quantized copies (written
# once with `quantize`, mapped at load). Prints one JSON object per line.
# Usage: bash scripts/bench_page.sh [MODEL_DIR] [THREADS]   (defaults: /tmp/mineru-random, all cores)
set -euo pipefail
cd "$(dirname "$0")/.."
B=./build/src/cli/mineru-cpp
M="${1:-/tmp/mineru-random}"
T="${2:-$(nproc)}"
[ -f "$M/model.safetensors" ] || "$B" gen-model --preset mineru2.5 -o "$M"
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
