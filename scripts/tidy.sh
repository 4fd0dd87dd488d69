#!/usr/bin/env bash
# clang-tidy (.clang-tidy: defect-finding checks, every finding an error) over the library
# sources, using build/compile_commands.json (run scripts/build.sh first).
#   scripts/tidy.sh          the layers that take untrusted input or run concurrently (CI):
#                            base (file parsers), net, server, engine, image, pdf, tokenizer
#   scripts/tidy.sh all      every source file except the Highway kernels (kernels/cpu: each
#                            is compiled once per SIMD target; their scalar twins are checked)
#   scripts/tidy.sh FILE...  the given files
# The SIMD kernels are left out: tidy would parse each once per target for little gain, and the
# twin tests compare them against the scalar reference on every target.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build/compile_commands.json ]; then
  echo "tidy: build/compile_commands.json missing: run scripts/build.sh first" >&2
  exit 2
fi
if [ "${1:-}" = all ]; then
  files=$(ls src/*/*.cc | grep -v '^src/kernels/cpu/')
elif [ $# -gt 0 ]; then
  files="$*"
else
  files=$(ls src/{base,net,server,engine,image,pdf,tokenizer}/*.cc)
fi
run-clang-tidy-14 -p build -j"$(nproc)" -quiet $files
