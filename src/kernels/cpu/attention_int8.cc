// kernels/cpu/attention_int8.cc — the int8 tiles of the CPU attention, on the AVX-512 VNNI target
// (AVX3_DL; the other targets compile only AttentionInt8Available here): S = Q Kᵀ over int8 key
// panels, the softmax straight to u8 probabilities, O = alpha O + P V over int8 value panels.
// attention_block.cc's RunBlock calls them per key tile. Not the quantizers and panel packing
// (attention_int8_pack.cc) nor the fp32 path (attention_block.cc).
//
// Int8 Q Kᵀ (AttentionShape::int8_qk, AVX-512 VNNI target, non-causal; AttentionUsesInt8): K is
// centred on its mean over all n_kv keys of the head (a per-row constant shift of the scores,
// which softmax ignores), quantized per key to int8 (scale max|k|/127) and packed as vpdpbusd
// panels (16 keys x 4 dims per vector, stored + 128); each Q row is quantized per row the same
// way; S = (sum q8 k8 - 128 sum q8) * sq * sk. Softmax stays fp32.
//
// Int8 P V (AttentionShape::int8_pv, same targets): V is centred per dim on its mean over all
// keys and quantized per dim (Int8Values: ref::AttentionInt8Values's arithmetic, bit for bit),
// packed as vpdpbusd panels (4 keys x 16 dims per vector); the softmax turns each row's
// probabilities of the tile into u8 against the tile's largest (ref::AttentionU8Probs's formula on
// its own exp, step = max / 255). Per tile and row:
// O = alpha O + step (sum_j p8 v8 * vs + sum_j p8 * mu), and l takes step * sum p8, so the
// weights O is normalised by are the quantized ones.

// <immintrin.h> first, with GCC 12's false positive in it silenced (see the header).
#include "kernels/cpu/x86_intrinsics.h"  // IWYU pragma: keep

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/attention_int8.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>
#include <cmath>
#include <cstring>

#include "hwy/highway.h"
#include "kernels/cpu/attention_internal-inl.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/dispatch.h"

HWY_BEFORE_NAMESPACE();
#if HWY_TARGET == HWY_AVX3_DL && defined(__GNUC__)
// Highway 1.0.3's AVX3_DL target string lacks "avx512vnni" (its CPU check requires it).
#pragma GCC target("avx512vnni")
#endif
namespace mineru {
namespace kernels {
namespace HWY_NAMESPACE {

#if HWY_TARGET == HWY_AVX3_DL
namespace {

// Key panels per score tile: R x kScorePanels accumulators, each broadcast 4-byte group of q
// feeding kScorePanels vpdpbusd (kBK / 16 panels per key tile is a multiple).
constexpr size_t kScorePanels = 4;
static_assert(kBK / kKeyLanes % kScorePanels == 0, "score tiles cover whole key tiles");

// S[r][16 kp + c] for rows [r0, r0 + R) and key panels [kp0, kp0 + kScorePanels) of the tile at
// key kt0.
template <size_t R>
HWY_INLINE void ScoreTileInt8(const Geometry& g, const Scratch& s, size_t r0, size_t kt0, size_t kp0,
                              float* S) {
  const size_t hd4 = Hd4(g), nq = hd4 / 4;
  const uint8_t* w[kScorePanels];
  for (size_t k = 0; k < kScorePanels; ++k) w[k] = s.k8p + (kt0 / kKeyLanes + kp0 + k) * kKeyLanes * hd4;
  __m512i p[R][kScorePanels];
  for (size_t r = 0; r < R; ++r) {
    for (size_t k = 0; k < kScorePanels; ++k) p[r][k] = _mm512_set1_epi32(s.qc[r0 + r]);
  }
  for (size_t q = 0; q < nq; ++q) {
    __m512i wq[kScorePanels];
#pragma GCC unroll 4
    for (size_t k = 0; k < kScorePanels; ++k) wq[k] = _mm512_load_si512(w[k] + q * 64);
#pragma GCC unroll 4
    for (size_t r = 0; r < R; ++r) {
      int32_t x4;
      std::memcpy(&x4, s.q8.get() + (r0 + r) * hd4 + 4 * q, 4);
      const __m512i xb = _mm512_set1_epi32(x4);
#pragma GCC unroll 4
      for (size_t k = 0; k < kScorePanels; ++k) MINERU_DPBUSD512(p[r][k], wq[k], xb);
    }
  }
  for (size_t k = 0; k < kScorePanels; ++k) {
    const __m512 sk = _mm512_loadu_ps(s.ksp + kt0 + (kp0 + k) * kKeyLanes);
    for (size_t r = 0; r < R; ++r) {
      _mm512_storeu_ps(
          S + (r0 + r) * g.tile + (kp0 + k) * kKeyLanes,
          _mm512_mul_ps(_mm512_cvtepi32_ps(p[r][k]), _mm512_mul_ps(sk, _mm512_set1_ps(s.qs[r0 + r]))));
    }
  }
}

// S[r][0, 64 ceil(bk / 64)) for rows [r0, r0 + R) (key panels kScorePanels at a time, within
// the allocation of whole key tiles; the scores past bk are never read as valid keys).
template <size_t R>
void ScoreRowsInt8(const Geometry& g, const Scratch& s, size_t r0, size_t kt0, size_t bk, float* S) {
  const size_t kpanels = (bk + kKeyLanes - 1) / kKeyLanes;
  for (size_t kp = 0; kp < kpanels; kp += kScorePanels) ScoreTileInt8<R>(g, s, r0, kt0, kp, S);
}

inline size_t NVec8(const Geometry& g) { return (g.hd + kDimLanes - 1) / kDimLanes; }

// 2^t for t up to ~8 (log2 255; underflowing to 0): t = n + f, |f| <= 1/2, 2^f by its degree-4 Taylor
// polynomial (relative error < 5e-5, far below the u8 step of 1/255 the result is rounded to).
HWY_INLINE __m512 Exp2ForU8(__m512 t) {
  const __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(t, n);
  __m512 p = _mm512_set1_ps(0.0096181291f);                  // ln2^4 / 24
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.0555041087f));  // ln2^3 / 6
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.2402265070f));  // ln2^2 / 2
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.6931471806f));  // ln2
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

constexpr float kLog2e = 1.4426950409f, kLog2Of255 = 7.9943534368f;

// The running maximum m (of scale * x) and alpha of rows [r0, r0 + R) of the block over their
// scores' first `valid` (> 0) values (srow: row r0's, rows `stride` floats apart), with what
// SoftmaxRowsU8 needs per row: the exponent's offset xmax * scale log2 e - log2 255 (voff) and
// the tile's largest probability 2^((xmax * scale - m) log2 e) (pmax).
template <size_t R>
HWY_INLINE void UpdateRowMaxima(const float* HWY_RESTRICT srow, size_t stride, size_t valid, float scale,
                                size_t r0, Scratch& s, __m512 voff[R], float pmax[R]) {
  __m512 vmax[R];
#pragma GCC unroll 4
  for (size_t r = 0; r < R; ++r) vmax[r] = _mm512_set1_ps(kNegInf);
  size_t j = 0;
  for (; j + 16 <= valid; j += 16) {
#pragma GCC unroll 4
    for (size_t r = 0; r < R; ++r) vmax[r] = _mm512_max_ps(vmax[r], _mm512_loadu_ps(srow + r * stride + j));
  }
  if (j < valid) {
#pragma GCC unroll 4
    for (size_t r = 0; r < R; ++r)
      vmax[r] = _mm512_mask_max_ps(vmax[r], Live(valid - j), vmax[r], _mm512_loadu_ps(srow + r * stride + j));
  }
  const float sl = scale * kLog2e;
#pragma GCC unroll 4
  for (size_t r = 0; r < R; ++r) {
    float& m = s.m[r0 + r];
    const float xmax = _mm512_reduce_max_ps(vmax[r]);  // scale > 0: the largest x has the largest score
    const float m_new = std::max(m, xmax * scale);
    s.alpha[r0 + r] = m == kNegInf ? 0.0f : m == m_new ? 1.0f : std::exp(m - m_new);  // exp(0) is exactly 1
    pmax[r] = _mm512_cvtss_f32(Exp2ForU8(_mm512_set1_ps(std::fma(xmax, sl, -m_new * kLog2e))));
    voff[r] = _mm512_set1_ps(std::fma(xmax, sl, -kLog2Of255));
    m = m_new;
  }
}

// SoftmaxRow for the int8 P V, rows [r0, r0 + R) of the block (srow, stride, valid as
// UpdateRowMaxima takes them): the same running maximum and alpha; the tile's probabilities
// p = 2^((x * scale - m) log2 e) go straight to u8 (s.p8 row r, zero from `valid` to n4) as
// ref::AttentionU8Probs defines them, q = p / max p * 255 rounded to nearest even, computed as
// 2^((x - xmax) scale log2 e + log2 255) (Exp2ForU8; the exponent is one FMA, the conversion
// rounds as MXCSR does by default, which nothing here changes, and the narrowing saturates q at
// 255). The step max p / 255 is Exp2ForU8 of the largest x; l takes step * sum(q): the weights O
// is normalised by are the quantized ones. srow is only read. A row's steps are a chain of
// dependent reductions and scalar operations about as long as its vector work: R rows advance
// together so that their chains overlap (R = 4, with the masks below kept to the last group, ran
// the ViT's int8 attention 1.1x faster in kernels_bench than one row at a time).
template <size_t R>
void SoftmaxRowsU8(const float* HWY_RESTRICT srow, size_t stride, size_t valid, size_t n4, float scale,
                   size_t r0, Scratch& s) {
  __m512 voff[R];
  float pmax[R];
  UpdateRowMaxima<R>(srow, stride, valid, scale, r0, s, voff, pmax);
  const __m512 vsl = _mm512_set1_ps(scale * kLog2e);
  // 64 keys at a time: four vectors of int32 (>= 0; dead lanes 0) saturate to u8 in two packs
  // (255 caps them as a min would), one permutation puts the keys back in order and vpsadbw sums
  // the stored bytes: 7 instructions per 64 keys where a min, a narrowing store and an add per 16
  // keys took 12 (the int8 attention ran 1.05x faster in kernels_bench). q's rows are kBK bytes: whole
  // groups of 64 fit, and the keys past `valid` in the last group are stored as 0.
  static_assert(kBK % 64 == 0, "a u8 row holds whole groups of 64 keys");
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  __m512i vsum[R];  // eight 64-bit sums each
#pragma GCC unroll 4
  for (size_t r = 0; r < R; ++r) vsum[r] = _mm512_setzero_si512();
  size_t j = 0;
  for (; j < valid; j += 64) {
    // Lane masks only in a last, partial group of 64 keys (their arithmetic cost as much as an exp).
    const bool whole = j + 64 <= valid;
    __mmask16 live[4];
#pragma GCC unroll 4
    for (size_t v = 0; v < 4; ++v) live[v] = j + 16 * v < valid ? Live(valid - j - 16 * v) : __mmask16{0};
#pragma GCC unroll 4
    for (size_t r = 0; r < R; ++r) {
      __m512i qi[4];
#pragma GCC unroll 4
      for (size_t v = 0; v < 4; ++v) {
        const float* x = srow + r * stride + j + 16 * v;
        if (whole) {
          qi[v] = _mm512_cvtps_epi32(Exp2ForU8(_mm512_fmsub_ps(_mm512_loadu_ps(x), vsl, voff[r])));
        } else {
          const __m512 e = Exp2ForU8(_mm512_fmsub_ps(_mm512_maskz_loadu_ps(live[v], x), vsl, voff[r]));
          qi[v] = _mm512_maskz_cvtps_epi32(live[v], e);
        }
      }
      // packus works per 128-bit lane: lane L's bytes hold keys 4L..4L+3 of qi[0], qi[1], qi[2], qi[3].
      const __m512i b =
          _mm512_packus_epi16(_mm512_packus_epi32(qi[0], qi[1]), _mm512_packus_epi32(qi[2], qi[3]));
      const __m512i bytes = _mm512_permutexvar_epi32(order, b);
      _mm512_storeu_si512(s.p8.get() + (r0 + r) * kBK + j, bytes);
      vsum[r] = _mm512_add_epi64(vsum[r], _mm512_sad_epu8(bytes, _mm512_setzero_si512()));
    }
  }
#pragma GCC unroll 4
  for (size_t r = 0; r < R; ++r) {
    uint8_t* q = s.p8.get() + (r0 + r) * kBK;
    if (j < n4) std::fill(q + j, q + n4, uint8_t{0});
    const int32_t sum = pmax[r] > 0.0f ? static_cast<int32_t>(_mm512_reduce_add_epi64(vsum[r])) : 0;
    s.l[r0 + r] = s.l[r0 + r] * s.alpha[r0 + r] + pmax[r] / 255.0f * static_cast<float>(sum);
    s.ps[r0 + r] = pmax[r] / 255.0f;
    s.psum[r0 + r] = sum;
  }
}

}  // namespace

// SoftmaxRowsU8 for row r alone, which may see no key of the tile (valid == 0: all zero, the
// state unchanged).
void SoftmaxRowU8(const float* HWY_RESTRICT srow, size_t valid, size_t n4, float scale, size_t r,
                  Scratch& s) {
  if (valid == 0) {
    std::fill(s.p8.get() + r * kBK, s.p8.get() + r * kBK + n4, uint8_t{0});
    s.alpha[r] = 1.0f;
    s.ps[r] = 0.0f;
    s.psum[r] = 0;
    return;
  }
  SoftmaxRowsU8<1>(srow, 0, valid, n4, scale, r, s);
}

// S of the block's rows over the tile at kt0 and, where int8_pv, their u8 probabilities: four
// rows at a time, so that a row's scores are still in L1 when its softmax reads them (the key
// tile, 256 x hd bytes, stays there for all the block's rows).
void ScoresInt8(const Geometry& g, const RowRefs& rows, size_t nr, size_t nk, size_t kt0, size_t bk,
                Scratch& s) {
  float* S = s.s.get();
  for (size_t r0 = 0; r0 < nr;) {
    const size_t R = nr - r0 >= 4 ? 4 : 1;
    if (R == 4) {
      ScoreRowsInt8<4>(g, s, r0, kt0, bk, S);
    } else {
      ScoreRowsInt8<1>(g, s, r0, kt0, bk, S);
    }
    const size_t valid = VisibleKeys(rows, r0, nk, kt0, bk), n4 = (bk + 3) / 4 * 4;
    bool same = valid > 0;  // the R rows see the same keys (always without a causal mask)
    for (size_t r = r0 + 1; r < r0 + R; ++r) same = same && VisibleKeys(rows, r, nk, kt0, bk) == valid;
    if (g.int8_pv && R == 4 && same) {
      SoftmaxRowsU8<4>(S + r0 * g.tile, g.tile, valid, n4, g.scale, r0, s);
    } else {
      for (size_t r = r0; r < r0 + R && g.int8_pv; ++r)
        SoftmaxRowU8(S + r * g.tile, VisibleKeys(rows, r, nk, kt0, bk), n4, g.scale, r, s);
    }
    r0 += R;
  }
}

namespace {

// O[r][16 dv0, 16 (dv0 + NV)) for rows [r0, r0 + R): alpha O + step (float(sum_j p8 v8) vs +
// psum mu), over the tile's nq key quads starting at key kt0.
template <size_t R, size_t NV>
HWY_INLINE void PvTileInt8(const Geometry& g, Scratch& s, size_t r0, size_t kt0, size_t nq, size_t dv0) {
  const size_t nvec = NVec8(g);
  const int8_t* vb = s.v8p + (kt0 / 4) * nvec * 64;
  const uint8_t* p8 = s.p8.get();
  // Every loop over the R x NV accumulators fully unrolled: an indexed one keeps the array in
  // memory, and GCC then stores each vpdpbusd result to the stack.
  __m512i acc[R][NV];
#pragma GCC unroll 4
  for (size_t r = 0; r < R; ++r) {
#pragma GCC unroll 5
    for (size_t v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_si512();
  }
  for (size_t q = 0; q < nq; ++q) {
    __m512i w[NV];
#pragma GCC unroll 5
    for (size_t v = 0; v < NV; ++v) w[v] = _mm512_load_si512(vb + (q * nvec + dv0 + v) * 64);
#pragma GCC unroll 4
    for (size_t r = 0; r < R; ++r) {
      int32_t x4;
      std::memcpy(&x4, p8 + (r0 + r) * kBK + 4 * q, 4);
      const __m512i xb = _mm512_set1_epi32(x4);
#pragma GCC unroll 5
      for (size_t v = 0; v < NV; ++v) MINERU_DPBUSD512(acc[r][v], xb, w[v]);
    }
  }
#pragma GCC unroll 5
  for (size_t v = 0; v < NV; ++v) {
    const size_t d0 = (dv0 + v) * kDimLanes;
    const __m512 vs = _mm512_loadu_ps(s.vsp + d0), mu = _mm512_loadu_ps(s.vmup + d0);
#pragma GCC unroll 4
    for (size_t r = 0; r < R; ++r) {
      float* o = s.o.get() + (r0 + r) * g.hdp + d0;
      const __m512 t = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[r][v]), vs,
                                       _mm512_mul_ps(_mm512_set1_ps(static_cast<float>(s.psum[r0 + r])), mu));
      _mm512_storeu_ps(o, _mm512_fmadd_ps(_mm512_loadu_ps(o), _mm512_set1_ps(s.alpha[r0 + r]),
                                          _mm512_mul_ps(_mm512_set1_ps(s.ps[r0 + r]), t)));
    }
  }
}

template <size_t NV>
void PvRowsInt8(const Geometry& g, Scratch& s, size_t nr, size_t kt0, size_t nq, size_t dv0) {
  size_t r = 0;
  for (; r + 4 <= nr; r += 4) PvTileInt8<4, NV>(g, s, r, kt0, nq, dv0);
  for (; r < nr; ++r) PvTileInt8<1, NV>(g, s, r, kt0, nq, dv0);
}

}  // namespace

// O = alpha O + P V for the block's nr rows over the tile at kt0 (bk keys), in int8.
void PvInt8(const Geometry& g, Scratch& s, size_t nr, size_t kt0, size_t bk) {
  const size_t nq = (bk + 3) / 4, nvec = NVec8(g);
  for (size_t dv0 = 0; dv0 < nvec; dv0 += 5) {
    switch (std::min<size_t>(5, nvec - dv0)) {
      case 1:
        PvRowsInt8<1>(g, s, nr, kt0, nq, dv0);
        break;
      case 2:
        PvRowsInt8<2>(g, s, nr, kt0, nq, dv0);
        break;
      case 3:
        PvRowsInt8<3>(g, s, nr, kt0, nq, dv0);
        break;
      case 4:
        PvRowsInt8<4>(g, s, nr, kt0, nq, dv0);
        break;
      default:
        PvRowsInt8<5>(g, s, nr, kt0, nq, dv0);
        break;
    }
  }
}
#endif  // HWY_AVX3_DL

bool AttentionInt8AvailableImpl() { return HWY_TARGET == HWY_AVX3_DL; }

}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace mineru
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mineru {
namespace kernels {
namespace cpu {

HWY_EXPORT(AttentionInt8AvailableImpl);

bool AttentionInt8Available(const KernelConfig& config) {
  return MINERU_DISPATCH(config, AttentionInt8AvailableImpl)();
}

}  // namespace cpu
}  // namespace kernels
}  // namespace mineru
#endif  // HWY_ONCE
