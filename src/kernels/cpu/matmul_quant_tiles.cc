// kernels/cpu/matmul_quant_tiles.cc — the row tiles of the integer MatMul path for block-quantized
// W (Q8_0, Q4_0, Q4_G128): R rows of int8 activations × C rows of W accumulated block by block
// with integer dot products (AVX2: vpmaddubsw + vpmaddwd; the sign trick for signed Q8 weights;
// unsigned nibbles for Q4 with the "-8" offset folded into a per-block correction; AVX-512: two
// blocks per vector, vpdpbusd on VNNI), scaled to fp32 per block; a portable Highway version of
// the same arithmetic elsewhere (ARM: the sdot / smmla tiles where the CPU has them). Not the
// activation quantization nor the choice of path (matmul_quant.cc), nor the column panels
// (matmul_vnni.cc, matmul_panels256.cc).

// <immintrin.h> first, with GCC 12's false positive in it silenced (see the header).
#include "kernels/cpu/x86_intrinsics.h"  // IWYU pragma: keep

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/matmul_quant_tiles.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>

#include "base/bf16.h"
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/matmul_quant_internal-inl.h"
#include "kernels/cpu/simd-inl.h"
#include "kernels/quant_internal.h"

HWY_BEFORE_NAMESPACE();
#if HWY_TARGET == HWY_AVX3_DL && defined(__GNUC__)
// Highway 1.0.3's AVX3_DL target string names "avxvnni" (VEX) but not "avx512vnni", which
// _mm512_dpbusd_epi32 needs; its CPU check for AVX3_DL does require AVX512-VNNI.
#pragma GCC target("avx512vnni")
#endif
namespace mineru {
namespace kernels {
namespace HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;

#if MINERU_X86_AVX2_PLUS
// ---------------------------------------------------------------------------------------
// AVX2 tiles. out[r * C + c] = row r of x · row c of W.

HWY_INLINE float HSum256(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

template <size_t R, size_t C>
HWY_INLINE void TileQ8(const uint8_t* const* HWY_RESTRICT wrow, const QRow* HWY_RESTRICT xr, size_t b_begin,
                       size_t nb, float* HWY_RESTRICT out) {
  __m256 acc[R][C];
  for (size_t r = 0; r < R; ++r) {
    for (size_t c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
  }
  const __m256i ones = _mm256_set1_epi16(1);
  for (size_t b = b_begin; b < nb; ++b) {
    __m256i aw[C], sw[C];
    __m256 dw[C];
#pragma GCC unroll 4
    for (size_t c = 0; c < C; ++c) {
      const uint8_t* blk = wrow[c] + b * internal::kQ8_0BlockBytes;
      dw[c] = _mm256_set1_ps(_cvtsh_ss(internal::LoadU16(blk)));
      sw[c] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
      aw[c] = _mm256_sign_epi8(sw[c], sw[c]);
    }
#pragma GCC unroll 4
    for (size_t r = 0; r < R; ++r) {
      const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xr[r].q + b * 32));
      const __m256 dx = _mm256_broadcast_ss(xr[r].d + b);
#pragma GCC unroll 4
      for (size_t c = 0; c < C; ++c) {
        const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(aw[c], _mm256_sign_epi8(xv, sw[c])), ones);
        acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_mul_ps(dx, dw[c]), acc[r][c]);
      }
    }
  }
  for (size_t r = 0; r < R; ++r) {
    for (size_t c = 0; c < C; ++c) out[r * C + c] = HSum256(acc[r][c]);
  }
}

// kSub = 1: Q4_0 (18-byte blocks of 32); kSub = 4: Q4_G128 (66-byte groups of 128).
template <size_t R, size_t C, size_t kSub>
HWY_INLINE void TileQ4(const uint8_t* const* HWY_RESTRICT wrow, const QRow* HWY_RESTRICT xr, size_t b_begin,
                       size_t nb, float* HWY_RESTRICT out) {
  constexpr size_t kBytes = 2 + 16 * kSub, kBlock = 32 * kSub;
  __m256 acc[R][C];
  float corr[R][C];
  for (size_t r = 0; r < R; ++r) {
    for (size_t c = 0; c < C; ++c) {
      acc[r][c] = _mm256_setzero_ps();
      corr[r][c] = 0.0f;
    }
  }
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i m4 = _mm256_set1_epi8(15);
  for (size_t b = b_begin; b < nb; ++b) {
    float dws[C];
    __m256i p16[R][C];
#pragma GCC unroll 4
    for (size_t s = 0; s < kSub; ++s) {
      __m256i wv[C];
#pragma GCC unroll 4
      for (size_t c = 0; c < C; ++c) {
        const uint8_t* blk = wrow[c] + b * kBytes;
        if (s == 0) dws[c] = _cvtsh_ss(internal::LoadU16(blk));
        const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2 + 16 * s));
        wv[c] = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(bytes, 4), bytes), m4);
      }
#pragma GCC unroll 4
      for (size_t r = 0; r < R; ++r) {
        const __m256i xv =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xr[r].q + b * kBlock + 32 * s));
#pragma GCC unroll 4
        for (size_t c = 0; c < C; ++c) {
          const __m256i p = _mm256_maddubs_epi16(wv[c], xv);  // <= 2*15*127 per lane: no saturation
          p16[r][c] = s == 0 ? p : _mm256_add_epi16(p16[r][c], p);
        }
      }
    }
#pragma GCC unroll 4
    for (size_t r = 0; r < R; ++r) {
      const __m256 dx = _mm256_broadcast_ss(xr[r].d + b);
      const float cx = xr[r].corr[b];
#pragma GCC unroll 4
      for (size_t c = 0; c < C; ++c) {
        const __m256i p = _mm256_madd_epi16(p16[r][c], ones);
        acc[r][c] =
            _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_mul_ps(dx, _mm256_set1_ps(dws[c])), acc[r][c]);
        corr[r][c] += dws[c] * cx;
      }
    }
  }
  for (size_t r = 0; r < R; ++r) {
    for (size_t c = 0; c < C; ++c) out[r * C + c] = HSum256(acc[r][c]) - corr[r][c];
  }
}

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
// ---------------------------------------------------------------------------------------
// AVX-512 tiles: two 32-value blocks (or one 128-value group as two halves) per vector.
// Lanes 0-7 of the int32 / float vectors belong to the first block, 8-15 to the second.

HWY_INLINE float HSum512(__m512 v) {
  return HSum256(_mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)));
}

// Scale vector [a x 8 | b x 8].
HWY_INLINE __m512 PairScale(float a, float b) {
  return _mm512_insertf32x8(_mm512_set1_ps(a), _mm256_set1_ps(b), 1);
}

// 32 nibble bytes q0 (block/sub-block s) and q1 (s + 1) -> 64 values in [0, 15] ordered
// [lo(q0) hi(q0) lo(q1) hi(q1)] (values 0..15, 16..31 of each 32-value block).
HWY_INLINE __m512i UnpackNibblePair(__m128i q0, __m128i q1) {
  const __m512i idx = _mm512_set_epi64(3, 2, 3, 2, 1, 0, 1, 0);
  const __m512i shift = _mm512_set_epi64(0x0004000400040004LL, 0x0004000400040004LL, 0, 0,
                                         0x0004000400040004LL, 0x0004000400040004LL, 0, 0);
  const __m512i v = _mm512_permutexvar_epi64(idx, _mm512_castsi256_si512(_mm256_set_m128i(q1, q0)));
  return _mm512_and_si512(_mm512_srlv_epi16(v, shift), _mm512_set1_epi8(15));
}

// Two consecutive Q8_0 blocks at blk: their 64 int8 values, and the scale vector [d0 x 8 | d1 x 8].
HWY_INLINE __m512i LoadQ8Pair(const uint8_t* blk, __m512* dw) {
  *dw = PairScale(_cvtsh_ss(internal::LoadU16(blk)), _cvtsh_ss(internal::LoadU16(blk + 34)));
  return _mm512_inserti64x4(
      _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2))),
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 36)), 1);
}

#if HWY_TARGET == HWY_AVX3_DL
// VNNI (vpdpbusd: u8 x s8, four products summed into each int32 lane). Q8: x is made unsigned
// by x + 128 (an xor of the sign bit) and the accumulator starts at -128 * sum(w) of its lane
// group, so each lane holds exactly sum(x * w) — the same integers as the AVX2/AVX-512 paths.
template <size_t R, size_t C>
HWY_INLINE void TileQ8x2(const uint8_t* const* HWY_RESTRICT wrow, const QRow* HWY_RESTRICT xr, size_t npairs,
                         float* HWY_RESTRICT out) {
  __m512 acc[R][C];
  for (size_t r = 0; r < R; ++r) {
    for (size_t c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
  }
  const __m512i k128 = _mm512_set1_epi8(static_cast<char>(0x80));
  const __m512i zero = _mm512_setzero_si512();
  for (size_t pb = 0; pb < npairs; ++pb) {
    const size_t b = 2 * pb;
    __m512i w[C], init[C];
    __m512 dw[C];
#pragma GCC unroll 4
    for (size_t c = 0; c < C; ++c) {
      w[c] = LoadQ8Pair(wrow[c] + b * internal::kQ8_0BlockBytes, &dw[c]);
      init[c] = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, k128, w[c]));
    }
#pragma GCC unroll 4
    for (size_t r = 0; r < R; ++r) {
      const __m512i xu = _mm512_xor_si512(_mm512_loadu_si512(xr[r].q + b * 32), k128);
      const __m512 dx = PairScale(xr[r].d[b], xr[r].d[b + 1]);
#pragma GCC unroll 4
      for (size_t c = 0; c < C; ++c) {
        const __m512i p = _mm512_dpbusd_epi32(init[c], xu, w[c]);
        acc[r][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(dx, dw[c]), acc[r][c]);
      }
    }
  }
  for (size_t r = 0; r < R; ++r) {
    for (size_t c = 0; c < C; ++c) out[r * C + c] = HSum512(acc[r][c]);
  }
}

// u8 x s8 of two vectors into one int32 vector: vpdpbusd (the nibbles are the unsigned side).
HWY_INLINE __m512i DotU8S8(__m512i acc, __m512i u, __m512i s) { return _mm512_dpbusd_epi32(acc, u, s); }
HWY_INLINE __m512i DotU8S8Pair(__m512i u0, __m512i s0, __m512i u1, __m512i s1) {
  return _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), u0, s0), u1, s1);
}
#else
template <size_t R, size_t C>
HWY_INLINE void TileQ8x2(const uint8_t* const* HWY_RESTRICT wrow, const QRow* HWY_RESTRICT xr, size_t npairs,
                         float* HWY_RESTRICT out) {
  __m512 acc[R][C];
  for (size_t r = 0; r < R; ++r) {
    for (size_t c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
  }
  const __m512i ones = _mm512_set1_epi16(1);
  const __m512i zero = _mm512_setzero_si512();
  for (size_t pb = 0; pb < npairs; ++pb) {
    const size_t b = 2 * pb;
    __m512i aw[C];
    __mmask64 neg[C];
    __m512 dw[C];
#pragma GCC unroll 4
    for (size_t c = 0; c < C; ++c) {
      const __m512i w = LoadQ8Pair(wrow[c] + b * internal::kQ8_0BlockBytes, &dw[c]);
      aw[c] = _mm512_abs_epi8(w);
      neg[c] = _mm512_movepi8_mask(w);
    }
#pragma GCC unroll 4
    for (size_t r = 0; r < R; ++r) {
      const __m512i xv = _mm512_loadu_si512(xr[r].q + b * 32);
      const __m512 dx = PairScale(xr[r].d[b], xr[r].d[b + 1]);
#pragma GCC unroll 4
      for (size_t c = 0; c < C; ++c) {
        const __m512i sx = _mm512_mask_sub_epi8(xv, neg[c], zero, xv);  // x with the sign of w
        const __m512i p = _mm512_madd_epi16(_mm512_maddubs_epi16(aw[c], sx), ones);
        acc[r][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(dx, dw[c]), acc[r][c]);
      }
    }
  }
  for (size_t r = 0; r < R; ++r) {
    for (size_t c = 0; c < C; ++c) out[r * C + c] = HSum512(acc[r][c]);
  }
}

HWY_INLINE __m512i DotU8S8(__m512i acc, __m512i u, __m512i s) {
  return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), _mm512_set1_epi16(1)));
}
// <= 4 * 15 * 127 per int16 lane before the widening: no saturation.
HWY_INLINE __m512i DotU8S8Pair(__m512i u0, __m512i s0, __m512i u1, __m512i s1) {
  return _mm512_madd_epi16(_mm512_add_epi16(_mm512_maddubs_epi16(u0, s0), _mm512_maddubs_epi16(u1, s1)),
                           _mm512_set1_epi16(1));
}
#endif  // HWY_AVX3_DL

// Q4_0: pairs of 18-byte blocks. Q4_G128: one 66-byte group = two vectors.
template <size_t R, size_t C, size_t kSub>
HWY_INLINE void TileQ4x2(const uint8_t* const* HWY_RESTRICT wrow, const QRow* HWY_RESTRICT xr, size_t nsteps,
                         float* HWY_RESTRICT out) {
  __m512 acc[R][C];
  float corr[R][C];
  for (size_t r = 0; r < R; ++r) {
    for (size_t c = 0; c < C; ++c) {
      acc[r][c] = _mm512_setzero_ps();
      corr[r][c] = 0.0f;
    }
  }
  for (size_t st = 0; st < nsteps; ++st) {
    if constexpr (kSub == 1) {
      const size_t b = 2 * st;
      __m512i w[C];
      float dw0[C], dw1[C];
      __m512 dw[C];
#pragma GCC unroll 4
      for (size_t c = 0; c < C; ++c) {
        const uint8_t* blk = wrow[c] + b * internal::kQ4_0BlockBytes;
        dw0[c] = _cvtsh_ss(internal::LoadU16(blk));
        dw1[c] = _cvtsh_ss(internal::LoadU16(blk + 18));
        dw[c] = PairScale(dw0[c], dw1[c]);
        w[c] = UnpackNibblePair(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2)),
                                _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 20)));
      }
#pragma GCC unroll 4
      for (size_t r = 0; r < R; ++r) {
        const __m512i xv = _mm512_loadu_si512(xr[r].q + b * 32);
        const __m512 dx = PairScale(xr[r].d[b], xr[r].d[b + 1]);
        const float c0 = xr[r].corr[b], c1 = xr[r].corr[b + 1];
#pragma GCC unroll 4
        for (size_t c = 0; c < C; ++c) {
          const __m512i p = DotU8S8(_mm512_setzero_si512(), w[c], xv);
          acc[r][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(dx, dw[c]), acc[r][c]);
          corr[r][c] += dw0[c] * c0;
          corr[r][c] += dw1[c] * c1;
        }
      }
    } else {
      const size_t g = st;
      __m512i w0[C], w1[C];
      float dws[C];
#pragma GCC unroll 4
      for (size_t c = 0; c < C; ++c) {
        const uint8_t* blk = wrow[c] + g * internal::kQ4_G128BlockBytes;
        dws[c] = _cvtsh_ss(internal::LoadU16(blk));
        const uint8_t* qs = blk + 2;
        w0[c] = UnpackNibblePair(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)),
                                 _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs + 16)));
        w1[c] = UnpackNibblePair(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs + 32)),
                                 _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs + 48)));
      }
#pragma GCC unroll 4
      for (size_t r = 0; r < R; ++r) {
        const __m512i x0 = _mm512_loadu_si512(xr[r].q + g * 128);
        const __m512i x1 = _mm512_loadu_si512(xr[r].q + g * 128 + 64);
        const __m512 dx = _mm512_set1_ps(xr[r].d[g]);
        const float cx = xr[r].corr[g];
#pragma GCC unroll 4
        for (size_t c = 0; c < C; ++c) {
          const __m512i p = DotU8S8Pair(w0[c], x0, w1[c], x1);
          acc[r][c] =
              _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(dx, _mm512_set1_ps(dws[c])), acc[r][c]);
          corr[r][c] += dws[c] * cx;
        }
      }
    }
  }
  for (size_t r = 0; r < R; ++r) {
    for (size_t c = 0; c < C; ++c) out[r * C + c] = HSum512(acc[r][c]) - corr[r][c];
  }
}

template <size_t R, size_t C>
HWY_INLINE void Tile(QuantType t, const uint8_t* const* wrow, const QRow* xr, size_t nb, float* out,
                     TileExtensions ext) {
  (void)ext;  // no extension beyond the target on x86
  float tail[R * C];
  if (t == QuantType::kQ4_G128) {
    TileQ4x2<R, C, 4>(wrow, xr, nb, out);
    return;
  }
  const size_t npairs = nb / 2;
  if (t == QuantType::kQ8_0) {
    TileQ8x2<R, C>(wrow, xr, npairs, out);
    if (nb % 2) TileQ8<R, C>(wrow, xr, nb - 1, nb, tail);
  } else {
    TileQ4x2<R, C, 1>(wrow, xr, npairs, out);
    if (nb % 2) TileQ4<R, C, 1>(wrow, xr, nb - 1, nb, tail);
  }
  if (nb % 2) {
    for (size_t i = 0; i < R * C; ++i) out[i] += tail[i];
  }
}

#else   // AVX2

template <size_t R, size_t C>
HWY_INLINE void Tile(QuantType t, const uint8_t* const* wrow, const QRow* xr, size_t nb, float* out,
                     TileExtensions ext) {
  (void)ext;
  if (t == QuantType::kQ8_0) {
    TileQ8<R, C>(wrow, xr, 0, nb, out);
  } else if (t == QuantType::kQ4_0) {
    TileQ4<R, C, 1>(wrow, xr, 0, nb, out);
  } else {
    TileQ4<R, C, 4>(wrow, xr, 0, nb, out);
  }
}
#endif  // AVX3

#else  // portable version: one (row, column) pair at a time, integer sums per block

HWY_INLINE int32_t BlockDotI8(const int8_t* HWY_RESTRICT a, const int8_t* HWY_RESTRICT b, size_t len) {
  const DF df;
  const hn::RebindToSigned<DF> di;
  const hn::Rebind<int8_t, DF> d8;
  const size_t N = hn::Lanes(df);
  auto sum = hn::Zero(di);
  for (size_t i = 0; i < len; i += N) {
    sum = hn::Add(sum,
                  hn::Mul(hn::PromoteTo(di, hn::LoadU(d8, a + i)), hn::PromoteTo(di, hn::LoadU(d8, b + i))));
  }
  return hn::GetLane(hn::SumOfLanes(di, sum));
}

template <size_t R, size_t C>
HWY_INLINE void Tile(QuantType t, const uint8_t* const* wrow, const QRow* xr, size_t nb, float* out,
                     TileExtensions ext) {
#if HWY_ARCH_ARM_A64 && (HWY_TARGET == HWY_NEON || HWY_TARGET == HWY_SVE_256 || HWY_TARGET == HWY_SVE2_128)
  constexpr bool kPairs = (R == 2 || R == 4) && C == 2;  // smmla's 2 x 2 tiles
  const bool smmla = kPairs && ext.smmla;
  if (smmla || ext.sdot) {  // smmla / sdot (matmul_smmla_arm.cc, matmul_sdot_arm.cc)
    const int8_t* xq[R];
    const float* xd[R];
    for (size_t r = 0; r < R; ++r) xq[r] = xr[r].q, xd[r] = xr[r].d;
    if (smmla) {
      cpu::QuantTileSmmla(t, R, wrow, xq, xd, nb, out);
    } else {
      cpu::QuantTileSdot(t, R, C, wrow, xq, xd, nb, out);
    }
    return;
  }
#else
  (void)ext;
#endif
  alignas(64) int8_t wq[128];
  for (size_t c = 0; c < C; ++c) {
    float acc[R] = {}, corr[R] = {};
    for (size_t b = 0; b < nb; ++b) {
      size_t block;
      const uint8_t* blk;
      if (t == QuantType::kQ8_0) {
        block = 32;
        blk = wrow[c] + b * internal::kQ8_0BlockBytes;
        std::copy(blk + 2, blk + 34, reinterpret_cast<uint8_t*>(wq));
      } else {
        block = t == QuantType::kQ4_0 ? 32 : 128;
        blk = wrow[c] + b * (2 + block / 2);
        for (size_t s = 0; s < block / 32; ++s) {
          for (size_t i = 0; i < 16; ++i) {
            const uint8_t byte = blk[2 + 16 * s + i];
            wq[32 * s + i] = static_cast<int8_t>(byte & 15);
            wq[32 * s + 16 + i] = static_cast<int8_t>(byte >> 4);
          }
        }
      }
      const float dw = F16ToF32(internal::LoadU16(blk));
      for (size_t r = 0; r < R; ++r) {
        const int32_t isum = BlockDotI8(wq, xr[r].q + b * block, block);
        acc[r] += (dw * xr[r].d[b]) * static_cast<float>(isum);
        if (t != QuantType::kQ8_0) corr[r] += dw * xr[r].corr[b];
      }
    }
    for (size_t r = 0; r < R; ++r) out[r * C + c] = acc[r] - corr[r];
  }
}
#endif

}  // namespace

template <size_t R>
void QuantRows(QuantType t, const QRow* xr, const uint8_t* wbase, size_t row_bytes, size_t nb,
               const float* bias, float* y, size_t i0, size_t n, size_t j0, size_t j1, TileExtensions ext) {
  constexpr size_t C = R == 1 ? 4 : 2;
  float out[R * C];
  size_t j = j0;
  for (; j + C <= j1; j += C) {
    const uint8_t* wr[C];
    for (size_t c = 0; c < C; ++c) wr[c] = wbase + (j + c) * row_bytes;
    if (i0 == 0 && j + 2 * C <= j1) {
      // The first row group streams W from memory: fetch the next tile's rows meanwhile
      // (doubles the DRAM rate of a decode step on one core).
      const uint8_t* next = wbase + (j + C) * row_bytes;
      for (size_t off = 0; off < C * row_bytes; off += 64) hwy::Prefetch(next + off);
    }
    Tile<R, C>(t, wr, xr, nb, out, ext);
    for (size_t r = 0; r < R; ++r) {
      for (size_t c = 0; c < C; ++c) y[(i0 + r) * n + j + c] = out[r * C + c] + (bias ? bias[j + c] : 0.0f);
    }
  }
  for (; j < j1; ++j) {
    const uint8_t* wr[1] = {wbase + j * row_bytes};
    Tile<R, 1>(t, wr, xr, nb, out, ext);
    for (size_t r = 0; r < R; ++r) y[(i0 + r) * n + j] = out[r] + (bias ? bias[j] : 0.0f);
  }
}

template void QuantRows<1>(QuantType, const QRow*, const uint8_t*, size_t, size_t, const float*, float*,
                           size_t, size_t, size_t, size_t, TileExtensions);
template void QuantRows<2>(QuantType, const QRow*, const uint8_t*, size_t, size_t, const float*, float*,
                           size_t, size_t, size_t, size_t, TileExtensions);
template void QuantRows<3>(QuantType, const QRow*, const uint8_t*, size_t, size_t, const float*, float*,
                           size_t, size_t, size_t, size_t, TileExtensions);
template void QuantRows<4>(QuantType, const QRow*, const uint8_t*, size_t, size_t, const float*, float*,
                           size_t, size_t, size_t, size_t, TileExtensions);

}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace mineru
HWY_AFTER_NAMESPACE();
