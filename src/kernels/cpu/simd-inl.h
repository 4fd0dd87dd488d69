// kernels/cpu/simd-inl.h — per-target building blocks shared by the SIMD kernels: the fp32
// register-tiled GEMM micro-kernel, panel packing (transposition), weight widening and
// horizontal reductions. Re-included once per target by foreach_target (no include guard on
// purpose; the toggle below is Highway's per-target guard pattern).

#if defined(MINERU_KERNELS_CPU_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MINERU_KERNELS_CPU_SIMD_INL_H_
#undef MINERU_KERNELS_CPU_SIMD_INL_H_
#else
#define MINERU_KERNELS_CPU_SIMD_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "hwy/highway.h"
#include "kernels/cpu/parallel.h"
#include "kernels/kernels.h"

#if HWY_ARCH_X86
#include <immintrin.h>
#endif

HWY_BEFORE_NAMESPACE();
namespace mineru {
namespace kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using cpu::ChunkSize;
using cpu::NumWorkers;
using cpu::PoolFor;
using cpu::RunTasks;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// True where the 256-bit x86 intrinsics (AVX2 and up) may be used directly.
#undef MINERU_X86_AVX2_PLUS
#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
#define MINERU_X86_AVX2_PLUS 1
#else
#define MINERU_X86_AVX2_PLUS 0
#endif

// Register tile of the fp32 GEMM: kMR rows of A x (2 vectors) columns of B: 12 of 16
// vector registers as accumulators on AVX2, more of the 32 on AVX-512.
#ifndef MINERU_AVX3_MR
#define MINERU_AVX3_MR 6
#endif
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
constexpr size_t kMR = MINERU_AVX3_MR;
#else
constexpr size_t kMR = 6;
#endif
HWY_INLINE size_t PanelWidth() { return 2 * hn::Lanes(DF()); }

// ---------------------------------------------------------------------------------------
// Widening loads of weight vectors (Lanes(DF) values starting at p).

HWY_INLINE VF LoadWidenBf16(const uint16_t* HWY_RESTRICT p) {
  const DF df;
  const hn::RebindToUnsigned<DF> du32;
  const hn::Rebind<uint16_t, DF> du16;
  return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du32, hn::LoadU(du16, p))));
}

HWY_INLINE VF LoadWidenF16(const uint16_t* HWY_RESTRICT p) {
  const DF df;
#if MINERU_X86_AVX2_PLUS
  const hn::Rebind<hwy::float16_t, DF> dh;  // F16C conversion
  return hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(p)));
#else
  // Integer version (Highway 1.0.3's emulation maps inf/NaN halves to finite values).
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const hn::Rebind<uint16_t, DF> du16;
  const auto bits = hn::PromoteTo(du, hn::LoadU(du16, p));
  const auto sign = hn::ShiftLeft<31>(hn::ShiftRight<15>(bits));
  const auto exp = hn::And(hn::ShiftRight<10>(bits), hn::Set(du, 0x1Fu));
  const auto mant = hn::And(bits, hn::Set(du, 0x3FFu));
  const auto normal = hn::Or(hn::ShiftLeft<23>(hn::Add(exp, hn::Set(du, 112u))), hn::ShiftLeft<13>(mant));
  const auto special = hn::Or(hn::Set(du, 0x7F800000u), hn::ShiftLeft<13>(mant));
  const auto sub =
      hn::BitCast(du, hn::Mul(hn::ConvertTo(df, hn::BitCast(di, mant)), hn::Set(df, 1.0f / 16777216.0f)));
  auto mag = hn::IfThenElse(hn::Eq(exp, hn::Set(du, 0x1Fu)), special, normal);
  mag = hn::IfThenElse(hn::Eq(exp, hn::Zero(du)), sub, mag);
  return hn::BitCast(df, hn::Or(sign, mag));
#endif
}

// out[0, len) = row values [c0, c0 + len) of a dense weight row (f32/bf16/f16), widened.
HWY_INLINE void WidenDenseChunk(DType dtype, const void* row, size_t c0, size_t len,
                                float* HWY_RESTRICT out) {
  const DF df;
  const size_t N = hn::Lanes(df);
  size_t i = 0;
  if (dtype == DType::kF32) {
    std::memcpy(out, static_cast<const float*>(row) + c0, len * sizeof(float));
    return;
  }
  const uint16_t* p = static_cast<const uint16_t*>(row) + c0;
  if (dtype == DType::kBF16) {
    for (; i + N <= len; i += N) hn::StoreU(LoadWidenBf16(p + i), df, out + i);
    for (; i < len; ++i) {
      const uint32_t u = static_cast<uint32_t>(p[i]) << 16;
      std::memcpy(out + i, &u, 4);
    }
  } else {
    for (; i + N <= len; i += N) hn::StoreU(LoadWidenF16(p + i), df, out + i);
    if (i < len) {
      alignas(64) uint16_t tmp[64] = {0};
      alignas(64) float f[64];
      std::memcpy(tmp, p + i, (len - i) * 2);
      hn::StoreU(LoadWidenF16(tmp), df, f);
      std::memcpy(out + i, f, (len - i) * sizeof(float));
    }
  }
}

// ---------------------------------------------------------------------------------------
// Reductions.

HWY_INLINE float ReduceSum(VF v) { return hn::GetLane(hn::SumOfLanes(DF(), v)); }
HWY_INLINE float ReduceMax(VF v) { return hn::GetLane(hn::MaxOfLanes(DF(), v)); }

// ---------------------------------------------------------------------------------------
// Packing: dst[d * ldd + c] = src[c * lds + d] for c < rows_valid (zero for rows_valid <= c
// < width), d < depth. The transposition that turns W rows (or K rows) into a B panel whose
// rows run along the GEMM depth.

#if MINERU_X86_AVX2_PLUS
HWY_INLINE void Transpose8x8(const float* HWY_RESTRICT src, size_t lds, float* HWY_RESTRICT dst, size_t ldd) {
  const __m256 r0 = _mm256_loadu_ps(src + 0 * lds), r1 = _mm256_loadu_ps(src + 1 * lds);
  const __m256 r2 = _mm256_loadu_ps(src + 2 * lds), r3 = _mm256_loadu_ps(src + 3 * lds);
  const __m256 r4 = _mm256_loadu_ps(src + 4 * lds), r5 = _mm256_loadu_ps(src + 5 * lds);
  const __m256 r6 = _mm256_loadu_ps(src + 6 * lds), r7 = _mm256_loadu_ps(src + 7 * lds);
  const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
  const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
  const __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
  const __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  _mm256_storeu_ps(dst + 0 * ldd, _mm256_permute2f128_ps(u0, u4, 0x20));
  _mm256_storeu_ps(dst + 1 * ldd, _mm256_permute2f128_ps(u1, u5, 0x20));
  _mm256_storeu_ps(dst + 2 * ldd, _mm256_permute2f128_ps(u2, u6, 0x20));
  _mm256_storeu_ps(dst + 3 * ldd, _mm256_permute2f128_ps(u3, u7, 0x20));
  _mm256_storeu_ps(dst + 4 * ldd, _mm256_permute2f128_ps(u0, u4, 0x31));
  _mm256_storeu_ps(dst + 5 * ldd, _mm256_permute2f128_ps(u1, u5, 0x31));
  _mm256_storeu_ps(dst + 6 * ldd, _mm256_permute2f128_ps(u2, u6, 0x31));
  _mm256_storeu_ps(dst + 7 * ldd, _mm256_permute2f128_ps(u3, u7, 0x31));
}
#endif

HWY_INLINE void PackTransposed(const float* HWY_RESTRICT src, size_t lds, size_t rows_valid, size_t width,
                               size_t depth, float* HWY_RESTRICT dst, size_t ldd) {
  size_t d0 = 0;
#if MINERU_X86_AVX2_PLUS
  const size_t full_rows = rows_valid & ~size_t{7};
  for (; d0 + 8 <= depth; d0 += 8) {
    for (size_t c0 = 0; c0 < full_rows; c0 += 8)
      Transpose8x8(src + c0 * lds + d0, lds, dst + d0 * ldd + c0, ldd);
    for (size_t d = d0; d < d0 + 8; ++d) {
      for (size_t c = full_rows; c < width; ++c) dst[d * ldd + c] = c < rows_valid ? src[c * lds + d] : 0.0f;
    }
  }
#endif
  for (size_t d = d0; d < depth; ++d) {
    for (size_t c = 0; c < width; ++c) dst[d * ldd + c] = c < rows_valid ? src[c * lds + d] : 0.0f;
  }
}

// ---------------------------------------------------------------------------------------
// The GEMM micro-kernel: C[r][0, NV*N) (op)= sum_k a[r][k] * B[k][0, NV*N) for r < MR.
// a: MR row pointers (broadcast reads); B rows at b + k * ldb (NV*N contiguous floats).
// Modes: kStore C = acc (+ bias[0, NV*N) if bias); kAdd C += acc; kScaleAdd C = alpha[r]*C + acc.
// The GEMM uses NV = 2 (panel width 2N); attention's P·V may use a wider single tile.

enum class CMode { kStore, kAdd, kScaleAdd };

// Writes one accumulator to C per kMode (bias: its N floats or null; alpha: the row's factor).
template <CMode kMode>
HWY_INLINE void StoreTileVec(VF x, float* HWY_RESTRICT cr, const float* HWY_RESTRICT bias, float alpha) {
  const DF d;
  if (kMode == CMode::kStore) {
    if (bias) x = hn::Add(x, hn::LoadU(d, bias));
  } else if (kMode == CMode::kAdd) {
    x = hn::Add(x, hn::LoadU(d, cr));
  } else {
    x = hn::MulAdd(hn::Set(d, alpha), hn::LoadU(d, cr), x);
  }
  hn::StoreU(x, d, cr);
}

// The register tile is the parameter pack `acc` (accumulator I holds row I / NV, vectors
// I % NV), expanded in lockstep with the index pack: SVE vectors are sizeless types, which
// cannot be array elements, but may be function parameters. The repeated broadcasts of a row's
// value and loads of a B vector within one step are common subexpressions the compiler merges.
template <size_t MR, size_t NV, CMode kMode, size_t... I, class... V>
HWY_INLINE void GemmTileAcc(std::index_sequence<I...>, const float* const* HWY_RESTRICT ap,
                            const float* HWY_RESTRICT b, size_t ldb, size_t depth,
                            float* const* HWY_RESTRICT c, const float* HWY_RESTRICT bias,
                            const float* HWY_RESTRICT alpha, V... acc) {
  const DF d;
  const size_t N = hn::Lanes(d);
#pragma GCC unroll 2
  for (size_t k = 0; k < depth; ++k) {
    const float* HWY_RESTRICT bk = b + k * ldb;
    ((acc = hn::MulAdd(hn::Set(d, ap[I / NV][k]), hn::LoadU(d, bk + (I % NV) * N), acc)), ...);
  }
  (StoreTileVec<kMode>(acc, c[I / NV] + (I % NV) * N, bias ? bias + (I % NV) * N : nullptr,
                       alpha ? alpha[I / NV] : 0.0f),
   ...);
}

// Starts GemmTileAcc with MR * NV zero accumulators.
template <size_t MR, size_t NV, CMode kMode, size_t... I>
HWY_INLINE void GemmTileZeros(std::index_sequence<I...> seq, const float* const* ap, const float* b,
                              size_t ldb, size_t depth, float* const* c, const float* bias,
                              const float* alpha) {
  const DF d;
  GemmTileAcc<MR, NV, kMode>(seq, ap, b, ldb, depth, c, bias, alpha, (static_cast<void>(I), hn::Zero(d))...);
}

template <size_t MR, size_t NV, CMode kMode>
HWY_INLINE void GemmTileNV(const float* const* HWY_RESTRICT a, const float* HWY_RESTRICT b, size_t ldb,
                           size_t depth, float* const* HWY_RESTRICT c, const float* HWY_RESTRICT bias,
                           const float* HWY_RESTRICT alpha) {
  const float* ap[MR];
#pragma GCC unroll 16
  for (size_t r = 0; r < MR; ++r) ap[r] = a[r];
  GemmTileZeros<MR, NV, kMode>(std::make_index_sequence<MR * NV>(), ap, b, ldb, depth, c, bias, alpha);
}

template <size_t MR, CMode kMode>
HWY_INLINE void GemmTile(const float* const* a, const float* b, size_t ldb, size_t depth, float* const* c,
                         const float* bias, const float* alpha) {
  GemmTileNV<MR, 2, kMode>(a, b, ldb, depth, c, bias, alpha);
}

// Runtime row count (1..MR) to the template.
template <CMode kMode, size_t MR = kMR, size_t NV = 2>
HWY_INLINE void GemmTileRows(size_t mr, const float* const* a, const float* b, size_t ldb, size_t depth,
                             float* const* c, const float* bias, const float* alpha) {
  if constexpr (MR == 1) {
    GemmTileNV<1, NV, kMode>(a, b, ldb, depth, c, bias, alpha);
  } else {
    if (mr == MR) {
      GemmTileNV<MR, NV, kMode>(a, b, ldb, depth, c, bias, alpha);
    } else {
      GemmTileRows<kMode, MR - 1, NV>(mr, a, b, ldb, depth, c, bias, alpha);
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace mineru
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
