#!/usr/bin/env bash
# Soak test (issue 35): DOCS documents (good, broken, hostile) through `serve`'s /tasks and
# /file_parse, then one PAGES-page PDF through /tasks and `parse`, on recorded outputs (--replay),
# loopback only, with the RSS of each process sampled; prints the figures as Markdown and keeps
# the details (soak.json: RSS series, outcomes) in OUT. Bounded: every wait has a deadline.
# Usage: bash scripts/soak.sh [DOCS] [PAGES] [OUT]   (defaults 1000, 3000, /tmp/mineru-soak)
# Needs a built tree (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=build/src/cli/mineru-cpp
[ -x "$BIN" ] || { echo "build first: bash scripts/build.sh" >&2; exit 1; }
exec python3 scripts/soak.py "$BIN" tests/fixtures/tinyvocab "${3:-/tmp/mineru-soak}" \
  --docs "${1:-1000}" --pages "${2:-3000}" --deadline-s 3600
