// kernels/quant_internal.h — shared by the reference and the SIMD integer paths: block
// records of the quantized layouts and the on-the-fly int8 quantization of activations.
// Not part of the public API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/quant.h"

namespace mineru {
namespace kernels {
namespace internal {

constexpr size_t kQ8_0BlockBytes = 34;
constexpr size_t kQ4_0BlockBytes = 18;
constexpr size_t kQ4_G128BlockBytes = 66;
// Bytes of one block (group for Q4_G128) of a quantized format (not kNone).
constexpr size_t BlockBytesOf(QuantType t) {
  return t == QuantType::kQ8_0   ? kQ8_0BlockBytes
         : t == QuantType::kQ4_0 ? kQ4_0BlockBytes
                                 : kQ4_G128BlockBytes;
}

inline uint16_t LoadU16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// Activations of one MatMul call quantized to int8, per block of `block` values (the weight
// format's block: 32, or 128 for Q4_G128), rows padded with zeros to kpad = nb * block.
//   q[m][kpad]   int8 values, round-to-nearest-even of x / d
//   d[m][nb]     scale = max|x| / 127 of the block (0 for an all-zero block)
//   corr[m][nb]  d * 8 * sum(q) of the block: the term that the Q4 formats' "-8" offset
//                contributes, so the integer dot can use the unsigned nibbles directly
// Both backends produce identical bytes (same IEEE operations in the same order).
struct ActLayout {
  int64_t block = 32;
  int64_t nb = 0;    // blocks per row
  int64_t kpad = 0;  // nb * block
};

inline ActLayout MakeActLayout(QuantType t, int64_t k) {
  ActLayout l;
  l.block = QuantBlockSize(t);
  l.nb = (k + l.block - 1) / l.block;
  l.kpad = l.nb * l.block;
  return l;
}

// The scalar twin of the SIMD activation quantizer (one row).
void QuantizeActRowRef(const float* x, int64_t k, const ActLayout& l, int8_t* q, float* d, float* corr);

}  // namespace internal
}  // namespace kernels
}  // namespace mineru
