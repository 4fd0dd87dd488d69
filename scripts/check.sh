#!/usr/bin/env bash
# The sanitizer and fuzz stage of CI, in one clang build (build-check): the whole tree with
# AddressSanitizer + UndefinedBehaviorSanitizer and libFuzzer coverage, -O1 and line tables
# only, SIMD kernels for AVX2 and the portable fallback (MINERU_SIMD_TARGETS=avx2: a third of
# the compile time; the release build tests every target). Then:
#   1. the whole ctest suite under the sanitizers (leaks checked, with the suppressions for
#      fontconfig/poppler's process-lifetime caches in tests/fuzz/lsan.supp);
#   2. every fuzz target for FUZZ_SECONDS (default 10) on its seed corpus.
# ThreadSanitizer (engine, scheduler, server tests) is scripts/tsan.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
CC=clang CXX=clang++ cmake -S . -B build-check -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
  -DMINERU_FUZZ=ON -DMINERU_SIMD_TARGETS=avx2 -DMINERU_WERROR=ON -DMINERU_CUDA=OFF
cmake --build build-check -j"$(nproc)"
LSAN_OPTIONS="suppressions=$PWD/tests/fuzz/lsan.supp" ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  ctest --test-dir build-check --output-on-failure -j"$(nproc)" --timeout 1200
bash scripts/run_fuzzers.sh build-check "${FUZZ_SECONDS:-10}"
