#!/usr/bin/env bash
# The main job on a fresh machine: set up, build, get the model, parse the sample document.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
B=./build/src/cli/mineru-cpp
# What `download` fetches (MinerU2.5-Pro-2605-1.2B, as MinerU 3.3+); a 2509 copy from before still works.
MODEL="${MINERU_MODEL:-$HOME/.cache/mineru-cpp/MinerU2.5-Pro-2605-1.2B}"
LEGACY="$HOME/.cache/mineru-cpp/MinerU2.5-2509-1.2B"
if [ -z "${MINERU_MODEL:-}" ] && [ ! -f "$MODEL/config.json" ] && [ -f "$LEGACY/config.json" ]; then MODEL="$LEGACY"; fi
if [ ! -f "$MODEL/config.json" ]; then
  "$B" download --model "$MODEL"
fi
"$B" parse samples/sample.pdf -o out/ --model "$MODEL"
echo "Outputs in out/sample/"
