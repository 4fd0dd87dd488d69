// kernels/cpu/matmul_smmla_arm.cc — the int8 row tiles of matmul_quant_tiles.cc with the ARMv8.6 int8
// matrix multiply (i8mm `smmla`: a 2x8 by 8x2 int8 product summed into a 2x2 int32 tile;
// Graviton 3/4, Apple M2 and later, Cortex-A710/X2 and later). aarch64 only, and compiled for
// armv8.2-a+dotprod+i8mm as a whole translation unit, like matmul_sdot_arm.cc and for the same
// reason: nothing here may run unless cpu::HasI8mm() — matmul_quant_tiles.cc checks it per tile.
//
// Layout: smmla multiplies two rows of x by two columns of W, 8 values of each at a time, so x
// rows and W rows are interleaved in pairs by 8-byte halves (a 64-bit zip of two 16-byte loads).
// Each lane of the result is one (row, column) pair's whole sum: unlike sdot's four partial lanes
// there is no horizontal reduction at the end.
//
// Arithmetic: both operands are signed, Q4 nibbles centred (nibble - 8) as in the sdot tiles.
// Per block (group for Q4_G128) and (row, column): the exact int32 sum, then
// y += float(sum) * (scale_w * scale_x), blocks in order.

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

// out[j] = 8 values of a then 8 of b, for the four 8-value quarters j of the 32 values (a0 a1)
// and (b0 b1): the operand layout of smmla for the pair (a, b).
inline void Interleave(int8x16_t a0, int8x16_t a1, int8x16_t b0, int8x16_t b1, int8x16_t out[4]) {
  auto zip = [](int8x16_t x, int8x16_t y, bool high) {
    const int64x2_t u = vreinterpretq_s64_s8(x), v = vreinterpretq_s64_s8(y);
    return vreinterpretq_s8_s64(high ? vzip2q_s64(u, v) : vzip1q_s64(u, v));
  };
  out[0] = zip(a0, b0, false);
  out[1] = zip(a0, b0, true);
  out[2] = zip(a1, b1, false);
  out[3] = zip(a1, b1, true);
}

// Rows [0, 2 RP) of x times columns [0, 2 CP) of W; out[r * 2CP + c].
template <QuantType T, size_t RP, size_t CP>
void TileSmmla(const uint8_t* const* wrow, const int8_t* const* xq, const float* const* xd, size_t nb,
               float* out) {
  constexpr size_t kSub = T == QuantType::kQ4_G128 ? 4 : 1;
  constexpr size_t kBytes = internal::BlockBytesOf(T);
  constexpr size_t C = 2 * CP;
  float32x4_t acc[RP][CP];
  for (size_t i = 0; i < RP; ++i) {
    for (size_t j = 0; j < CP; ++j) acc[i][j] = vdupq_n_f32(0.0f);
  }
  for (size_t b = 0; b < nb; ++b) {
    int32x4_t p[RP][CP];
    for (size_t i = 0; i < RP; ++i) {
      for (size_t j = 0; j < CP; ++j) p[i][j] = vdupq_n_s32(0);
    }
    for (size_t s = 0; s < kSub; ++s) {
      int8x16_t w[CP][4];
      for (size_t j = 0; j < CP; ++j) {
        int8x16_t a0, a1, b0, b1;
        LoadW32<T>(wrow[2 * j] + b * kBytes, s, &a0, &a1);
        LoadW32<T>(wrow[2 * j + 1] + b * kBytes, s, &b0, &b1);
        Interleave(a0, a1, b0, b1, w[j]);
      }
      for (size_t i = 0; i < RP; ++i) {
        const int8_t* x0 = xq[2 * i] + b * 32 * kSub + 32 * s;
        const int8_t* x1 = xq[2 * i + 1] + b * 32 * kSub + 32 * s;
        int8x16_t x[4];
        Interleave(vld1q_s8(x0), vld1q_s8(x0 + 16), vld1q_s8(x1), vld1q_s8(x1 + 16), x);
        for (size_t j = 0; j < CP; ++j) {
          for (size_t q = 0; q < 4; ++q) p[i][j] = vmmlaq_s32(p[i][j], x[q], w[j][q]);
        }
      }
    }
    float dw[C];
    for (size_t c = 0; c < C; ++c) dw[c] = F16ToF32(internal::LoadU16(wrow[c] + b * kBytes));
    for (size_t i = 0; i < RP; ++i) {
      const float d0 = xd[2 * i][b], d1 = xd[2 * i + 1][b];
      for (size_t j = 0; j < CP; ++j) {
        // Lanes: (row 2i, col 2j), (2i, 2j + 1), (2i + 1, 2j), (2i + 1, 2j + 1).
        const float sc[4] = {dw[2 * j] * d0, dw[2 * j + 1] * d0, dw[2 * j] * d1, dw[2 * j + 1] * d1};
        acc[i][j] = vfmaq_f32(acc[i][j], vcvtq_f32_s32(p[i][j]), vld1q_f32(sc));
      }
    }
  }
  for (size_t i = 0; i < RP; ++i) {
    for (size_t j = 0; j < CP; ++j) {
      out[(2 * i) * C + 2 * j] = vgetq_lane_f32(acc[i][j], 0);
      out[(2 * i) * C + 2 * j + 1] = vgetq_lane_f32(acc[i][j], 1);
      out[(2 * i + 1) * C + 2 * j] = vgetq_lane_f32(acc[i][j], 2);
      out[(2 * i + 1) * C + 2 * j + 1] = vgetq_lane_f32(acc[i][j], 3);
    }
  }
}

// The tiles matmul_quant_tiles.cc forms with two or more rows: R in {2, 4}, C = 2.
template <QuantType T>
void TileSmmlaR(size_t R, const uint8_t* const* wrow, const int8_t* const* xq, const float* const* xd,
                size_t nb, float* out) {
  if (R == 4) {
    TileSmmla<T, 2, 1>(wrow, xq, xd, nb, out);
  } else {
    TileSmmla<T, 1, 1>(wrow, xq, xd, nb, out);
  }
}

}  // namespace

void QuantTileSmmla(QuantType t, size_t R, const uint8_t* const* wrow, const int8_t* const* xq,
                    const float* const* xd, size_t nb, float* out) {
  if (t == QuantType::kQ8_0) {
    TileSmmlaR<QuantType::kQ8_0>(R, wrow, xq, xd, nb, out);
  } else if (t == QuantType::kQ4_0) {
    TileSmmlaR<QuantType::kQ4_0>(R, wrow, xq, xd, nb, out);
  } else {
    TileSmmlaR<QuantType::kQ4_G128>(R, wrow, xq, xd, nb, out);
  }
}

}  // namespace cpu
}  // namespace kernels
}  // namespace mineru
