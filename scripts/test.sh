#!/usr/bin/env bash
# Sets up the machine, builds, and runs the whole test suite (unit, golden, e2e).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 600
# The web page: build it, then drive the real server in headless Chromium.
(cd web && npm ci --no-audit --no-fund && npm run build && npm test)
