#!/usr/bin/env bash
# CI step: fails (and names the files) when a C++ or CUDA source (.cc .h .cu .cuh) differs from
# what clang-format-14 and .clang-format make of it. Fix with scripts/format.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
bad=()
while IFS= read -r -d '' f; do
  clang-format-14 --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done < <(git ls-files -z '*.cc' '*.h' '*.cu' '*.cuh')
if [ "${#bad[@]}" -ne 0 ]; then
  echo "not formatted (run scripts/format.sh): ${bad[*]}" >&2
  exit 1
fi
echo "format: all C++ sources match .clang-format"
