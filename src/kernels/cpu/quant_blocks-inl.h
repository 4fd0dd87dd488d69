// kernels/cpu/quant_blocks-inl.h — reading the blocks of the quantized formats (kernels/quant.h)
// as signed int8 vectors, shared by the x86 integer panel kernels (matmul_vnni.cc on AVX-512
// VNNI, matmul_panels256.cc on AVX2). Re-included once per target by foreach_target (Highway's
// per-target guard pattern, as simd-inl.h).

#if defined(MINERU_KERNELS_CPU_QUANT_BLOCKS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MINERU_KERNELS_CPU_QUANT_BLOCKS_INL_H_
#undef MINERU_KERNELS_CPU_QUANT_BLOCKS_INL_H_
#else
#define MINERU_KERNELS_CPU_QUANT_BLOCKS_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"
#include "kernels/quant_internal.h"

HWY_BEFORE_NAMESPACE();
namespace mineru {
namespace kernels {
namespace HWY_NAMESPACE {

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3_DL
// The 32 values of sub-block `s` (32 values; s > 0 only for Q4_G128) of block/group `g` of the
// quantized row `wr`, as signed int8 (Q4: nibble - 8), values in order.
template <QuantType T>
HWY_INLINE __m256i LoadSub(const uint8_t* wr, size_t g, size_t s) {
  const uint8_t* blk = wr + g * internal::BlockBytesOf(T) + 2;
  if constexpr (T == QuantType::kQ8_0) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk));
  } else {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 16 * s));
    const __m256i nib =
        _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(bytes, 4), bytes), _mm256_set1_epi8(15));
    return _mm256_sub_epi8(nib, _mm256_set1_epi8(8));
  }
}
#endif

}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace mineru
HWY_AFTER_NAMESPACE();

#endif  // MINERU_KERNELS_CPU_QUANT_BLOCKS_INL_H_ toggle
