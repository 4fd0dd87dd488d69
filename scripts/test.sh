#!/usr/bin/env bash
# Sets up the machine, checks the format, builds (warnings are errors), runs clang-tidy on the
# layers that take untrusted input or run concurrently, and runs the whole test
# suite: unit, golden and e2e tests (ctest),
# the web page in headless Chromium, the aarch64 cross build under qemu (scripts/arm64.sh; skip with
# MINERU_SKIP_ARM64=1), then the sanitizer stages — the suite and every fuzz target
# under ASan+UBSan (scripts/check.sh) and the engine/server tests under TSan (scripts/tsan.sh).
# MINERU_SKIP_SANITIZERS=1 stops after the web test (a quick local run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/check_format.sh
bash scripts/build.sh -DMINERU_WERROR=ON  # a warning fails CI
bash scripts/tidy.sh  # a clang-tidy finding in the input-facing and concurrent layers fails CI
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 600
# The web page: build it, then drive the real server in headless Chromium.
(cd web && npm ci --no-audit --no-fund && npm run build && npm test)
if [ "${MINERU_SKIP_ARM64:-0}" != 1 ]; then
  bash scripts/arm64.sh
fi
if [ "${MINERU_SKIP_SANITIZERS:-0}" != 1 ]; then
  bash scripts/check.sh
  bash scripts/tsan.sh
fi
