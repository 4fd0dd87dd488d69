#!/usr/bin/env bash
# Formats every C++ and CUDA source (.cc .h .cu .cuh) of the project in place with clang-format-14
# and .clang-format.
# scripts/check_format.sh (a CI step) fails on any file this would change.
set -euo pipefail
cd "$(dirname "$0")/.."
git ls-files -z '*.cc' '*.h' '*.cu' '*.cuh' | xargs -0 clang-format-14 -i
