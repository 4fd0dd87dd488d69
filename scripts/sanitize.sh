#!/usr/bin/env bash
# The whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer (gcc), and the engine
# and server tests under ThreadSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMINERU_SANITIZE=ON
cmake --build build-asan -j"$(nproc)"
LSAN_OPTIONS=suppressions=$PWD/tests/fuzz/lsan.supp ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j"$(nproc)" --timeout 1200
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMINERU_TSAN=ON
cmake --build build-tsan -j"$(nproc)" --target engine_test scheduler_test server_test mineru-cpp
TSAN_OPTIONS=halt_on_error=1 ctest --test-dir build-tsan --output-on-failure -R "Engine|Scheduler|Server" --timeout 1200
