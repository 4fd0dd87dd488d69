#!/usr/bin/env bash
# Runs every libFuzzer target of an already built tree for a bounded time on its seed corpus.
# Usage: bash scripts/run_fuzzers.sh BUILD_DIR [SECONDS_PER_TARGET]   (default 20)
# New inputs go to BUILD_DIR/corpus/<target>; the seeds in tests/fuzz/corpus stay as committed.
# A finding prints its report and leaves BUILD_DIR/crash-<target>-*; exit status 1.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:?usage: run_fuzzers.sh BUILD_DIR [SECONDS]}"
SECS="${2:-20}"
export LSAN_OPTIONS="suppressions=$PWD/tests/fuzz/lsan.supp"
status=0
for t in safetensors config tokenizer image pdf chat_request layout_post replay gguf http_framing json; do
  work="$BUILD/corpus/$t"
  mkdir -p "$work"
  echo "== fuzz_$t (${SECS}s)"
  if ! "$BUILD/tests/fuzz/fuzz_$t" "$work" "tests/fuzz/corpus/$t" -max_total_time="$SECS" -rss_limit_mb=4096 \
      -timeout=30 -print_final_stats=1 -artifact_prefix="$BUILD/crash-$t-" > "$BUILD/fuzz_$t.log" 2>&1; then
    echo "FINDING in fuzz_$t:"; grep -A30 -E "ERROR|SUMMARY" "$BUILD/fuzz_$t.log" | head -60
    status=1
  else
    grep -E "stat::number_of_executed_units" "$BUILD/fuzz_$t.log" | tail -n 1
  fi
done
exit $status
