// kernels/cpu/quant_blocks_arm.h — reading the blocks of the quantized formats (kernels/quant.h)
// as signed int8 NEON vectors, shared by the aarch64 integer tiles (matmul_sdot_arm.cc,
// matmul_smmla_arm.cc). Those files are compiled for different architecture extensions, so
// these helpers have internal linkage: each file keeps its own copy, built with its own flags.
#pragma once

#include <arm_neon.h>

#include <cstddef>
#include <cstdint>

#include "kernels/quant.h"
#include "kernels/quant_internal.h"

namespace mineru {
namespace kernels {
namespace cpu {

// The 32 signed weights of sub-block s (32 values; s > 0 only for Q4_G128) of the block at blk:
// values 0-15 in *w0 and 16-31 in *w1 (Q4: nibble - 8).
template <QuantType T>
static inline void LoadW32(const uint8_t* blk, size_t s, int8x16_t* w0, int8x16_t* w1) {
  if constexpr (T == QuantType::kQ8_0) {
    *w0 = vld1q_s8(reinterpret_cast<const int8_t*>(blk + 2));
    *w1 = vld1q_s8(reinterpret_cast<const int8_t*>(blk + 18));
  } else {
    const uint8x16_t q = vld1q_u8(blk + 2 + 16 * s);
    const int8x16_t eight = vdupq_n_s8(8);
    *w0 = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(q, vdupq_n_u8(15))), eight);
    *w1 = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(q, 4)), eight);
  }
}

}  // namespace cpu
}  // namespace kernels
}  // namespace mineru
