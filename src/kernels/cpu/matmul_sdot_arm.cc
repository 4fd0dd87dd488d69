// kernels/cpu/matmul_sdot_arm.cc — the int8 row tiles of matmul_quant_tiles.cc with the ARMv8.2 dot
// product (sdot: four int8 x int8 products summed into each int32 lane; Raspberry Pi 5 /
// Cortex-A76, Graviton, Apple M). aarch64 only, and compiled for armv8.2-a+dotprod as a whole
// translation unit (src/kernels/CMakeLists.txt): a function-level target attribute inside
// Highway's pragma region made GCC 12 emit ARMv8.1 atomics into the surrounding, baseline code.
// So nothing here may run unless cpu::HasDotExtension() — matmul_quant_tiles.cc checks it per tile.
//
// Arithmetic: both operands are signed, so Q4 nibbles are centred (nibble - 8) before the
// products and need no correction term. Per block (group for Q4_G128) and (row, column): exact
// int32 sums, then y += float(sum) * (scale_w * scale_x), blocks in order.

#include <arm_neon.h>

#include <cstddef>
#include <cstdint>

#include "base/bf16.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/quant_blocks_arm.h"
#include "kernels/quant_internal.h"

namespace mineru {
namespace kernels {
namespace cpu {
namespace {

template <QuantType T, size_t R, size_t C>
void TileSdot(const uint8_t* const* wrow, const int8_t* const* xq, const float* const* xd, size_t nb,
              float* out) {
  constexpr size_t kSub = T == QuantType::kQ4_G128 ? 4 : 1;
  constexpr size_t kBytes = internal::BlockBytesOf(T);
  float32x4_t acc[R][C];
  for (size_t r = 0; r < R; ++r) {
    for (size_t c = 0; c < C; ++c) acc[r][c] = vdupq_n_f32(0.0f);
  }
  for (size_t b = 0; b < nb; ++b) {
    int32x4_t p[R][C];
    float dw[C];
    for (size_t r = 0; r < R; ++r) {
      for (size_t c = 0; c < C; ++c) p[r][c] = vdupq_n_s32(0);
    }
    for (size_t c = 0; c < C; ++c) dw[c] = F16ToF32(internal::LoadU16(wrow[c] + b * kBytes));
    for (size_t s = 0; s < kSub; ++s) {
      int8x16_t w0[C], w1[C];
      for (size_t c = 0; c < C; ++c) LoadW32<T>(wrow[c] + b * kBytes, s, &w0[c], &w1[c]);
      for (size_t r = 0; r < R; ++r) {
        const int8_t* x = xq[r] + b * 32 * kSub + 32 * s;
        const int8x16_t x0 = vld1q_s8(x), x1 = vld1q_s8(x + 16);
        for (size_t c = 0; c < C; ++c) p[r][c] = vdotq_s32(vdotq_s32(p[r][c], w0[c], x0), w1[c], x1);
      }
    }
    for (size_t r = 0; r < R; ++r) {
      const float dx = xd[r][b];
      for (size_t c = 0; c < C; ++c) acc[r][c] = vfmaq_n_f32(acc[r][c], vcvtq_f32_s32(p[r][c]), dw[c] * dx);
    }
  }
  for (size_t r = 0; r < R; ++r) {
    for (size_t c = 0; c < C; ++c) out[r * C + c] = vaddvq_f32(acc[r][c]);
  }
}

template <QuantType T, size_t R>
void TileSdotC(size_t C, const uint8_t* const* wrow, const int8_t* const* xq, const float* const* xd,
               size_t nb, float* out) {
  if (C == 4) {
    TileSdot<T, R, 4>(wrow, xq, xd, nb, out);
  } else if (C == 2) {
    TileSdot<T, R, 2>(wrow, xq, xd, nb, out);
  } else {
    TileSdot<T, R, 1>(wrow, xq, xd, nb, out);
  }
}

template <QuantType T>
void TileSdotRC(size_t R, size_t C, const uint8_t* const* wrow, const int8_t* const* xq,
                const float* const* xd, size_t nb, float* out) {
  switch (R) {
    case 4:
      return TileSdotC<T, 4>(C, wrow, xq, xd, nb, out);
    case 3:
      return TileSdotC<T, 3>(C, wrow, xq, xd, nb, out);
    case 2:
      return TileSdotC<T, 2>(C, wrow, xq, xd, nb, out);
    default:
      return TileSdotC<T, 1>(C, wrow, xq, xd, nb, out);
  }
}

}  // namespace

void QuantTileSdot(QuantType t, size_t R, size_t C, const uint8_t* const* wrow, const int8_t* const* xq,
                   const float* const* xd, size_t nb, float* out) {
  if (t == QuantType::kQ8_0) {
    TileSdotRC<QuantType::kQ8_0>(R, C, wrow, xq, xd, nb, out);
  } else if (t == QuantType::kQ4_0) {
    TileSdotRC<QuantType::kQ4_0>(R, C, wrow, xq, xd, nb, out);
  } else {
    TileSdotRC<QuantType::kQ4_G128>(R, C, wrow, xq, xd, nb, out);
  }
}

}  // namespace cpu
}  // namespace kernels
}  // namespace mineru
