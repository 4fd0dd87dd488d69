#!/usr/bin/env bash
# The aarch64 stage of CI: cross-compiles the model core (MINERU_CORE_ONLY: base, kernels,
# tokenizer, image, model, engine) with Debian 12's g++-aarch64-linux-gnu into build-arm64 and
# runs its tests under qemu-user:
#   - kernels_test (every kernel against its scalar twin on each compiled Highway target: on ARM
#     that is NEON only, see src/kernels/CMakeLists.txt) on a Cortex-A72 (Raspberry Pi 4:
#     ARMv8.0, no dot product: the portable int8 path, and proof that nothing newer leaks into
#     baseline code), a Cortex-A76 (Raspberry Pi 5: NEON, dot product, fp16: the sdot tiles) and
#     qemu's "max" CPU (SVE2, i8mm, bf16: the smmla tiles) with 128-bit vectors (the SVE2_128
#     target, as on Neoverse N2 / V2) and with 256-bit vectors (SVE_256, as on Neoverse V1);
#     each kernel test runs once per target the CPU supports (NEON and the SVE one there);
#   - on the Cortex-A76: model_golden_test (activations, logits and greedy ids against Hugging
#     Face), quantize_test and gguf_test (the q8/q4 integer paths: pre-quantized equals
#     load-time quantization, llama.cpp's blocks, GGUF q8/q4 accuracy), image_test, base_test and
#     tokenizer_test, all in full; model_golden_test again on the 128-bit `max` (SVE2_128 + smmla).
# Not run under qemu: model_unit_test, the engine/scheduler tests and everything above the engine
# (not built: MINERU_CORE_ONLY), to keep the stage within a few minutes.
# Installs its packages first (idempotent; needs root or sudo). MINERU_ARM64_SKIP_INSTALL=1 skips
# that step (packages already there).
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
if [ "${MINERU_ARM64_SKIP_INSTALL:-0}" != 1 ]; then
  export DEBIAN_FRONTEND=noninteractive
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    $SUDO dpkg --add-architecture arm64
    $SUDO apt-get update -qq
  fi
  # The :arm64 -dev packages co-install with the amd64 ones (Debian multiarch); the headers are
  # shared, the libraries live in /usr/lib/aarch64-linux-gnu.
  $SUDO apt-get install -y -qq --no-install-recommends \
    g++-aarch64-linux-gnu qemu-user cmake ninja-build pkg-config nlohmann-json3-dev \
    libhwy-dev:arm64 libpcre2-dev:arm64 libutf8proc-dev:arm64 libxxhash-dev:arm64 libgtest-dev:arm64 \
    libpng-dev:arm64 libjpeg-dev:arm64 libwebp-dev:arm64 libtiff-dev:arm64
fi

cmake -S . -B build-arm64 -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DMINERU_CORE_ONLY=ON -DMINERU_WERROR=ON -DMINERU_CUDA=OFF
cmake --build build-arm64 -j"$(nproc)" \
  --target kernels_test model_golden_test quantize_test gguf_test tokenizer_test image_test base_test

# No QEMU_LD_PREFIX / -L: the binaries load the multiarch libc6:arm64 (see the toolchain file).
run() {  # run CPU TEST [gtest args...]
  local cpu=$1 test=$2
  shift 2
  echo "== qemu-aarch64 -cpu $cpu $test $*"
  local t0=$SECONDS
  QEMU_CPU=$cpu qemu-aarch64 "build-arm64/tests/$test" --gtest_brief=1 "$@"
  echo "== $test on $cpu: $((SECONDS - t0)) s"
}
# MINERU_EXPECT_I8MM / MINERU_EXPECT_TARGET: what the i8mm probe must report and the Highway
# target the dispatch must pick on each CPU (sve-default-vector-length is in bytes).
sve128=max,sve-default-vector-length=16
sve256=max,sve-default-vector-length=32
MINERU_EXPECT_I8MM=0 MINERU_EXPECT_TARGET=NEON run cortex-a72 kernels/kernels_test
MINERU_EXPECT_I8MM=0 MINERU_EXPECT_TARGET=NEON run cortex-a76 kernels/kernels_test
MINERU_EXPECT_I8MM=1 MINERU_EXPECT_TARGET=SVE2_128 run "$sve128" kernels/kernels_test
MINERU_EXPECT_I8MM=1 MINERU_EXPECT_TARGET=SVE_256 run "$sve256" kernels/kernels_test
run cortex-a76 model/model_golden_test
run "$sve128" model/model_golden_test
run cortex-a76 model/quantize_test
run cortex-a76 model/gguf_test
run cortex-a76 image/image_test
run cortex-a76 base/base_test
run cortex-a76 tokenizer/tokenizer_test
