#!/usr/bin/env bash
# Builds only the libFuzzer targets (clang, ASan+UBSan on the libraries they use) and runs each
# for a bounded time on its seed corpus. Usage: bash scripts/fuzz.sh [SECONDS_PER_TARGET]  (default 20)
# Longer runs: build-fuzz/tests/fuzz/fuzz_pdf tests/fuzz/corpus/pdf -max_total_time=3600 -jobs=2
set -euo pipefail
cd "$(dirname "$0")/.."
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMINERU_FUZZ=ON \
  -DMINERU_BUILD_TESTS=OFF -DMINERU_SIMD_TARGETS=avx2 -DMINERU_WERROR=ON
cmake --build build-fuzz -j"$(nproc)" --target fuzz_safetensors fuzz_config fuzz_tokenizer fuzz_image fuzz_pdf \
  fuzz_chat_request fuzz_layout_post fuzz_replay fuzz_gguf fuzz_http_framing fuzz_json
bash scripts/run_fuzzers.sh build-fuzz "${1:-20}"
