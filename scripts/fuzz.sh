#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan on the whole tree) and runs each for a bounded
# time on its seed corpus. Usage: bash scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 20)
# Longer runs: build-fuzz/tests/fuzz/fuzz_pdf tests/fuzz/corpus/pdf -max_total_time=3600 -jobs=2
set -euo pipefail
cd "$(dirname "$0")/.."
SECS="${1:-20}"
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMINERU_FUZZ=ON \
  -DMINERU_BUILD_TESTS=OFF
targets="safetensors config tokenizer image pdf chat_request layout_post replay"
cmake --build build-fuzz -j"$(nproc)" --target $(export LSAN_OPTIONS="suppressions=$PWD/tests/fuzz/lsan.supp"
status=0
for t in $targets; do printf 'fuzz_%s ' "$t"; done)
export LSAN_OPTIONS="suppressions=$PWD/tests/fuzz/lsan.supp"
status=0
for t in $targets; do
  work="build-fuzz/corpus/$t"
  mkdir -p "$work"
  echo "== fuzz_$t (${SECS}s)"
  # New inputs go to the scratch corpus; the seeds in tests/fuzz/corpus stay as committed.
  if ! "build-fuzz/tests/fuzz/fuzz_$t" "$work" "tests/fuzz/corpus/$t" -max_total_time="$SECS" -rss_limit_mb=4096 \
      -timeout=30 -print_final_stats=1 -artifact_prefix="build-fuzz/crash-$t-" > "build-fuzz/fuzz_$t.log" 2>&1; then
    echo "FINDING in fuzz_$t:"; grep -A30 -E "ERROR|SUMMARY" "build-fuzz/fuzz_$t.log" | head -60
    status=1
  else
    grep -E "stat::number_of_executed_units|Done" "build-fuzz/fuzz_$t.log" | tail -n 2
  fi
done
exit $status
