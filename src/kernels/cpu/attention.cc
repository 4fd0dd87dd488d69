// kernels/cpu/attention.cc — tiled online-softmax ("flash") attention for all shapes:
// vision (non-causal, thousands of patches), causal prefill and decode (n_q = 1).
//
// Work is organised per KV head: the query rows of all heads sharing it (GQA group) are
// one list of rows r -> (query i = r / group, head = kv_head * group + r % group), cut into
// blocks of kBQ rows. A task = one KV head × a range of row blocks (or, when there are too
// few rows to keep the workers busy, × a range of keys, merged afterwards). A task packs the
// keys it needs once — K^T into [keys/2N][head_dim][2N] panels and V into [keys][head_dim
// padded] — then for each row block walks key tiles (Geometry::tile keys): S = Q K^T (6×2N register tiles,
// the GEMM micro-kernel), the online softmax update (vectorized exp), O = alpha O + P V.
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
#define HWY_TARGET_INCLUDE "kernels/cpu/attention.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "base/bf16.h"
#include "hwy/aligned_allocator.h"
#include "hwy/cache_control.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/simd-inl.h"
#include "kernels/reference.h"

HWY_BEFORE_NAMESPACE();
#if HWY_TARGET == HWY_AVX3_DL && defined(__GNUC__)
// Highway 1.0.3's AVX3_DL target string lacks "avx512vnni" (its CPU check requires it).
#pragma GCC target("avx512vnni")
#endif
namespace mineru {
namespace kernels {
namespace HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;

constexpr size_t kBQ = 48;  // query rows per block (multiple of kMR)
// Keys per tile (Geometry::tile, also the row stride of the score tile S): kBK for int8 Q Kᵀ or
// P V, whose per-row softmax bookkeeping (two reductions, a scalar exp and the u8 step) is then
// shared by twice the keys (attention 8% faster at 5,476 patches); kBK / 2 for fp32 attention,
// whose score tile then stays within L1 (and whose results stay bit for bit those of before).
constexpr size_t kBK = 256;  // multiple of every panel width, as is kBK / 2
static_assert(kBK == ref::kAttentionPvTile, "the u8 probabilities' tile is the scalar twin's");
// The int8 P V's int32 sums (at most kBK u8 probabilities times |v8| <= 127) convert to float exactly.
static_assert(kBK * 255 * 127 < (size_t{1} << 24), "P V sums must stay exact in fp32");
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

struct Geometry {
  size_t n_q, n_kv, hd, hdp, group, num_kv_heads, kv_offset;
  size_t pv_nv;  // > 0: P·V in one tile of pv_nv vectors per row (hdp = pv_nv * N), AVX-512 only
  size_t q_stride, kv_stride, out_stride;
  const AttentionShape* shape;  // row addressing of K/V (contiguous or paged)
  bool causal;
  float scale;
  size_t rows;   // query rows per KV head = n_q * group
  bool int8_qk;  // Q Kᵀ in int8 (see the top of the file)
  bool int8_pv;  // P V in int8 (see the top of the file)
  bool kv16;     // K and V are fp16 blocks (AttentionShape::k_blocks16), widened as they are packed
  size_t tile;   // keys per tile and the row stride of S: kBK with int8 Q Kᵀ or P V, else kBK / 2
};

struct Scratch {
  hwy::AlignedFreeUniquePtr<float[]> kt, vp, s, o;
  hwy::AlignedFreeUniquePtr<float[]> k32;  // fp16 keys of one panel widened [panel width][hd]
  std::vector<float> m, l, alpha;
  // int8 Q Kᵀ: key panels (16 keys x hd4 bytes each), key scales, the block's int8 Q rows
  // (kBQ x hd4), their scales and -128 x their sums.
  hwy::AlignedFreeUniquePtr<uint8_t[]> k8;
  hwy::AlignedFreeUniquePtr<float[]> ks;
  hwy::AlignedFreeUniquePtr<int8_t[]> q8;
  float qs[kBQ];
  int32_t qc[kBQ];
  // int8 P V: value panels (key quad, 16 dims: 64 bytes), per-dim scales and means (16-padded),
  // the tile's u8 probabilities (kBQ x kBK), their steps and sums.
  hwy::AlignedFreeUniquePtr<int8_t[]> v8;
  hwy::AlignedFreeUniquePtr<float[]> vs, vmu;
  hwy::AlignedFreeUniquePtr<uint8_t[]> p8;
  float ps[kBQ];
  int32_t psum[kBQ];
  // What the int8 tiles read: the buffers above, or one KV head of PackKvInt8's bytes.
  const uint8_t* k8p = nullptr;
  const float* ksp = nullptr;
  const int8_t* v8p = nullptr;
  const float *vsp = nullptr, *vmup = nullptr;
};

// Per-row state of one block.
struct RowRefs {
  const float* q[kBQ];
  size_t limit[kBQ];  // keys [k_lo, k_lo + limit) are visible (relative to the packed range)
};

// dst[0, n) = the fp16 values src[0, n) widened to fp32 (exact: the same as F16ToF32).
void WidenF16(const uint16_t* HWY_RESTRICT src, size_t n, float* HWY_RESTRICT dst) {
  const DF df;
  const hn::Rebind<hwy::float16_t, DF> dh;
  const size_t N = hn::Lanes(df);
  size_t i = 0;
  for (; i + N <= n; i += N)
    hn::StoreU(hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(src + i))), df,
               dst + i);
  for (; i < n; ++i) dst[i] = F16ToF32(src[i]);
}

// Where key / value row j of KV head kvh starts, and its bytes (fp32 or fp16 storage).
const char* KvRowBytes(const Geometry& g, const float* kv, bool values, size_t j, size_t kvh) {
  const AttentionShape& sh = *g.shape;
  const auto jj = static_cast<int64_t>(j);
  if (g.kv16) {
    return reinterpret_cast<const char*>((values ? ValueRow16(sh, jj) : KeyRow16(sh, jj)) + kvh * g.hd);
  }
  return reinterpret_cast<const char*>((values ? ValueRow(sh, kv, jj) : KeyRow(sh, kv, jj)) + kvh * g.hd);
}

void PrefetchRow(const char* row, size_t bytes) {
  for (size_t off = 0; off < bytes; off += 64) hwy::Prefetch(row + off);
}

void PackKeys(const Geometry& g, const float* k, const float* v, size_t kvh, size_t k_lo, size_t nk,
              Scratch& s) {
  const size_t NR = PanelWidth();
  const size_t panels = (nk + NR - 1) / NR;
  const AttentionShape& sh = *g.shape;
  const bool paged = sh.k_blocks || g.kv16;
  const size_t row_bytes = g.hd * (g.kv16 ? sizeof(uint16_t) : sizeof(float));
  // Keys [j, j + run) that are contiguous in memory: all of them, or up to a block's end.
  auto run_of = [&](size_t j, size_t left) {
    return paged ? std::min(left, static_cast<size_t>(sh.kv_block) - j % static_cast<size_t>(sh.kv_block))
                 : left;
  };
  // Paged rows come from scattered blocks (usually DRAM in batched decode): prefetch the next
  // panel's key rows while this one is transposed.
  auto prefetch_rows = [&](size_t j_begin, size_t j_end) {
    for (size_t j = j_begin; j < j_end; ++j) PrefetchRow(KvRowBytes(g, k, false, j, kvh), row_bytes);
  };
  if (paged && !g.int8_qk) prefetch_rows(k_lo, k_lo + std::min(NR, nk));
  for (size_t p = 0; p < panels && !g.int8_qk; ++p) {
    const size_t j0 = k_lo + p * NR, valid = std::min(NR, nk - p * NR);
    float* dst = s.kt.get() + p * g.hd * NR;
    if (paged && p + 1 < panels) prefetch_rows(j0 + NR, j0 + NR + std::min(NR, nk - (p + 1) * NR));
    for (size_t c = 0; c < valid;) {
      const size_t run = run_of(j0 + c, valid - c);
      const bool last = c + run == valid;  // the last run also writes the zero columns
      if (g.kv16) {                        // the run's rows widened first (contiguous, hd apart)
        for (size_t r = 0; r < run; ++r)
          WidenF16(KeyRow16(sh, static_cast<int64_t>(j0 + c + r)) + kvh * g.hd, g.hd, s.k32.get() + r * g.hd);
        PackTransposed(s.k32.get(), g.hd, run, last ? NR - c : run, g.hd, dst + c, NR);
      } else {
        PackTransposed(KeyRow(sh, k, static_cast<int64_t>(j0 + c)) + kvh * g.hd, g.kv_stride, run,
                       last ? NR - c : run, g.hd, dst + c, NR);
      }
      c += run;
    }
  }
  float* vp = s.vp.get();
  for (size_t j = 0; j < panels * NR && !g.int8_pv; ++j) {
    float* dst = vp + j * g.hdp;
    if (j < nk) {
      if (paged && j + 8 < nk) PrefetchRow(KvRowBytes(g, v, true, k_lo + j + 8, kvh), row_bytes);
      if (g.kv16) {
        WidenF16(ValueRow16(sh, static_cast<int64_t>(k_lo + j)) + kvh * g.hd, g.hd, dst);
      } else {
        const float* src = ValueRow(sh, v, static_cast<int64_t>(k_lo + j)) + kvh * g.hd;
        std::copy(src, src + g.hd, dst);
      }
      std::fill(dst + g.hd, dst + g.hdp, 0.0f);
    } else {
      std::fill(dst, dst + g.hdp, 0.0f);
    }
  }
}

// Keys of the tile [kt0, kt0 + bk) that row r of the block sees (a prefix of the tile).
inline size_t VisibleKeys(const RowRefs& rows, size_t r, size_t nk, size_t kt0, size_t bk) {
  const size_t lim = std::min(rows.limit[r], nk);
  return lim > kt0 ? std::min(bk, lim - kt0) : 0;
}

#if HWY_TARGET == HWY_AVX3_DL
constexpr size_t kKeyLanes = 16;  // keys per int8 panel (int32 lanes)
inline size_t Hd4(const Geometry& g) { return (g.hd + 3) / 4 * 4; }

inline __mmask16 Live(size_t left) {
  return left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1);
}

// ref::AttentionInt8Row with the scalar code's float operations, 16 values at a time (the
// largest |x| is exact in any order; each product and its rounding are the same): the same
// bytes and scale.
float Int8Row(const float* x, size_t n, int8_t* q8) {
  __m512 vmax = _mm512_setzero_ps();
  for (size_t j = 0; j < n; j += 16)
    vmax = _mm512_max_ps(vmax, _mm512_abs_ps(_mm512_maskz_loadu_ps(Live(n - j), x + j)));
  const float scale = _mm512_reduce_max_ps(vmax) / 127.0f;
  const __m512 inv = _mm512_set1_ps(scale != 0.0f ? 1.0f / scale : 0.0f);
  for (size_t j = 0; j < n; j += 16) {
    const __m512 p = _mm512_mul_ps(_mm512_maskz_loadu_ps(Live(n - j), x + j), inv);
    _mm512_mask_cvtepi32_storeu_epi8(
        q8 + j, Live(n - j),
        _mm512_cvtps_epi32(_mm512_roundscale_ps(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
  }
  return scale;
}

// Row sources of the quantizers: Load(j, c) = dims [16c, 16c + 16) of key / value row j of one
// KV head as fp32 (zero past hd). F32Rows reads them as AttentionShape addresses them; F16Rows
// widens fp16 rows (exactly, as F16ToF32 does), so both quantize the same values alike.
struct F32Rows {
  const AttentionShape& s;
  const float* kv;
  bool values;
  size_t kvh, hd;
  HWY_INLINE __m512 Load(size_t j, size_t c) const {
    const auto jj = static_cast<int64_t>(j);
    const float* row = (values ? ValueRow(s, kv, jj) : KeyRow(s, kv, jj)) + kvh * hd;
    return _mm512_maskz_loadu_ps(Live(hd - 16 * c), row + 16 * c);
  }
};
struct F16Rows {
  const uint16_t* base;  // row 0 of the head
  size_t row_stride, hd;
  HWY_INLINE __m512 Load(size_t j, size_t c) const {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(Live(hd - 16 * c), base + j * row_stride + 16 * c));
  }
};

// mean[0, 16 ceil(hd / 16)) = the mean over all n_kv rows: each dim summed in row order and
// divided as ref's quantizers do; zero past hd.
template <class Rows>
void MeanRows(const Rows& rows, size_t n_kv, size_t hd, float* mean) {
  const size_t nc = (hd + 15) / 16;
  std::fill(mean, mean + nc * 16, 0.0f);
  for (size_t j = 0; j < n_kv; ++j) {
    for (size_t c = 0; c < nc; ++c)
      _mm512_storeu_ps(mean + 16 * c, _mm512_add_ps(_mm512_loadu_ps(mean + 16 * c), rows.Load(j, c)));
  }
  const __m512 n = _mm512_set1_ps(static_cast<float>(n_kv));
  for (size_t c = 0; c < nc; ++c)
    _mm512_storeu_ps(mean + 16 * c, _mm512_div_ps(_mm512_loadu_ps(mean + 16 * c), n));
}

// ref::AttentionInt8Keys, vectorised alike: keys [k_lo, k_lo + nk) of n_kv, centred on the mean of all.
template <class Rows>
void Int8Keys(const Rows& rows, size_t n_kv, size_t hd, size_t k_lo, size_t nk, size_t stride, int8_t* k8,
              float* ks) {
  const size_t nc = (hd + 15) / 16;
  std::vector<float> mean(nc * 16), row(nc * 16);
  MeanRows(rows, n_kv, hd, mean.data());
  for (size_t j = 0; j < nk; ++j) {
    for (size_t c = 0; c < nc; ++c) {
      _mm512_storeu_ps(row.data() + 16 * c,
                       _mm512_sub_ps(rows.Load(k_lo + j, c), _mm512_loadu_ps(mean.data() + 16 * c)));
    }
    int8_t* dst = k8 + j * stride;
    ks[j] = Int8Row(row.data(), hd, dst);
    std::fill(dst + hd, dst + stride, int8_t{0});
  }
}

// ref::AttentionInt8Values, vectorised alike (vs and mu get 16 ceil(hd / 16) entries, zero past hd).
template <class Rows>
void Int8Values(const Rows& rows, size_t n_kv, size_t hd, size_t k_lo, size_t nk, size_t stride, int8_t* v8,
                float* vs, float* mu) {
  const size_t nc = (hd + 15) / 16;
  MeanRows(rows, n_kv, hd, mu);
  std::vector<float> inv(nc * 16);
  for (size_t c = 0; c < nc; ++c) {
    const __m512 m = _mm512_loadu_ps(mu + 16 * c);
    __m512 amax = _mm512_setzero_ps();
    for (size_t j = 0; j < n_kv; ++j)
      amax = _mm512_max_ps(amax, _mm512_abs_ps(_mm512_sub_ps(rows.Load(j, c), m)));
    const __m512 scale = _mm512_div_ps(amax, _mm512_set1_ps(127.0f));
    _mm512_storeu_ps(vs + 16 * c, scale);
    const __mmask16 nonzero = _mm512_cmp_ps_mask(scale, _mm512_setzero_ps(), _CMP_NEQ_OQ);
    _mm512_storeu_ps(inv.data() + 16 * c, _mm512_maskz_div_ps(nonzero, _mm512_set1_ps(1.0f), scale));
  }
  for (size_t j = 0; j < nk; ++j) {
    int8_t* dst = v8 + j * stride;
    std::fill(dst + hd, dst + stride, int8_t{0});
    for (size_t c = 0; c < nc; ++c) {
      const __m512 p = _mm512_mul_ps(_mm512_sub_ps(rows.Load(k_lo + j, c), _mm512_loadu_ps(mu + 16 * c)),
                                     _mm512_loadu_ps(inv.data() + 16 * c));
      _mm512_mask_cvtepi32_storeu_epi8(
          dst + 16 * c, Live(hd - 16 * c),
          _mm512_cvtps_epi32(_mm512_roundscale_ps(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
    }
  }
}

// Packs keys [k_lo, k_lo + nk) of one KV head (n_kv keys in all) as int8 panels (Int8Keys
// quantizes; this lays the bytes out): panel p, quad q, lane c = key 16p + c, dims 4q..4q+3, + 128,
// into k8 (whole panels) and their scales into ks. Keys past nk in the last panel: zero (stored
// 128) with scale 0.
template <class Rows>
void PackKeysInt8(const Rows& rows, size_t n_kv, size_t hd, size_t k_lo, size_t nk, uint8_t* k8out,
                  float* ksout) {
  const size_t hd4 = (hd + 3) / 4 * 4, panels = (nk + kKeyLanes - 1) / kKeyLanes;
  std::vector<int8_t> k8(panels * kKeyLanes * hd4, 0);
  std::vector<float> ks(panels * kKeyLanes, 0.0f);
  Int8Keys(rows, n_kv, hd, k_lo, nk, hd4, k8.data(), ks.data());
  // Quad q of panel p: lane c = the 4 bytes at 4q of key row 16p + c (a gather of 32-bit
  // groups, hd4 / 4 apart), + 128 (an xor of the sign bit).
  const __m512i lanes =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(static_cast<int>(hd4 / 4)));
  const __m512i sign = _mm512_set1_epi8(static_cast<char>(0x80));
  for (size_t p = 0; p < panels; ++p) {
    const int8_t* src = k8.data() + p * kKeyLanes * hd4;
    uint8_t* dst = k8out + p * kKeyLanes * hd4;
    for (size_t q = 0; q < hd4 / 4; ++q) {
      const __m512i v = _mm512_i32gather_epi32(lanes, src + 4 * q, 4);
      _mm512_storeu_si512(dst + q * 64, _mm512_xor_si512(v, sign));
    }
  }
  std::copy(ks.begin(), ks.end(), ksout);
}

// The block's Q rows as int8 (Int8Row), their scales and -128 x their sums.
void QuantizeQueries(const Geometry& g, const RowRefs& rows, size_t nr, Scratch& s) {
  const size_t hd4 = Hd4(g);
  for (size_t r = 0; r < nr; ++r) {
    int8_t* q8 = s.q8.get() + r * hd4;
    s.qs[r] = Int8Row(rows.q[r], g.hd, q8);
    std::fill(q8 + g.hd, q8 + hd4, int8_t{0});
    int32_t sum = 0;
    for (size_t d = 0; d < hd4; ++d) sum += q8[d];
    s.qc[r] = -128 * sum;
  }
}

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

constexpr size_t kDimLanes = 16;  // dims per int8 value panel vector
inline size_t NVec8(const Geometry& g) { return (g.hd + kDimLanes - 1) / kDimLanes; }

// Packs values [k_lo, k_lo + nk) of one KV head (n_kv in all) as int8 panels (Int8Values
// quantizes): key quad jq, vector dv, lane c, byte b = value of key 4 jq + b, dim 16 dv + c; the
// per-dim scales and means into vs and mu (16-padded). Quads past nk are left as they are (the
// caller keeps them zero).
template <class Rows>
void PackValuesInt8(const Rows& rows, size_t n_kv, size_t hd, size_t k_lo, size_t nk, int8_t* dst, float* vs,
                    float* mu) {
  const size_t nvec = (hd + kDimLanes - 1) / kDimLanes, stride = nvec * kDimLanes;
  // Kept by each thread between calls (assign zero-fills without reallocating): a fresh vector
  // per head was fresh pages per head, faulted in by its zero fill (~half a MB at 5,476 keys).
  thread_local std::vector<int8_t> v8;
  v8.assign(nk * stride, int8_t{0});
  Int8Values(rows, n_kv, hd, k_lo, nk, stride, v8.data(), vs, mu);
  // Quad jq, vector dv: the 16 dims of 4 keys interleaved byte by byte (a 4 x 16 transpose);
  // keys past nk are zero.
  const __m128i zero = _mm_setzero_si128();
  for (size_t jq = 0; jq < (nk + 3) / 4; ++jq) {
    for (size_t dv = 0; dv < nvec; ++dv) {
      __m128i r[4];
      for (size_t b = 0; b < 4; ++b) {
        const size_t j = 4 * jq + b;
        r[b] = j < nk ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(v8.data() + j * stride + 16 * dv))
                      : zero;
      }
      const __m128i lo01 = _mm_unpacklo_epi8(r[0], r[1]), hi01 = _mm_unpackhi_epi8(r[0], r[1]);
      const __m128i lo23 = _mm_unpacklo_epi8(r[2], r[3]), hi23 = _mm_unpackhi_epi8(r[2], r[3]);
      auto* out = reinterpret_cast<__m128i*>(dst + (jq * nvec + dv) * 64);
      _mm_storeu_si128(out + 0, _mm_unpacklo_epi16(lo01, lo23));
      _mm_storeu_si128(out + 1, _mm_unpackhi_epi16(lo01, lo23));
      _mm_storeu_si128(out + 2, _mm_unpacklo_epi16(hi01, hi23));
      _mm_storeu_si128(out + 3, _mm_unpackhi_epi16(hi01, hi23));
    }
  }
}

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

// Softmax update of one row for a tile whose first `valid` scores are visible. Scores are
// scaled in place and replaced by probabilities (zero past `valid`, up to `width`).
HWY_INLINE void SoftmaxRow(float* HWY_RESTRICT srow, size_t valid, size_t width, float scale, float& m,
                           float& l, float& alpha) {
  const DF d;
  const size_t N = hn::Lanes(d);
  if (valid == 0) {
    std::fill(srow, srow + width, 0.0f);
    alpha = 1.0f;
    return;
  }
  const VF vscale = hn::Set(d, scale);
  VF vmax = hn::Set(d, kNegInf);
  size_t j = 0;
  for (; j + N <= valid; j += N) {
    const VF x = hn::Mul(hn::LoadU(d, srow + j), vscale);
    hn::StoreU(x, d, srow + j);
    vmax = hn::Max(vmax, x);
  }
  const size_t rem = valid - j;
  if (rem) {
    const auto mask = hn::FirstN(d, rem);
    const VF x = hn::Mul(hn::LoadU(d, srow + j), vscale);
    hn::StoreU(x, d, srow + j);
    vmax = hn::Max(vmax, hn::IfThenElse(mask, x, hn::Set(d, kNegInf)));
  }
  const float m_new = std::max(m, ReduceMax(vmax));
  alpha = m == kNegInf ? 0.0f : m == m_new ? 1.0f : std::exp(m - m_new);  // exp(0) is exactly 1: no call
  const VF vm = hn::Set(d, m_new);
  VF vsum = hn::Zero(d);
  j = 0;
  for (; j + N <= valid; j += N) {
    const VF p = hn::Exp(d, hn::Sub(hn::LoadU(d, srow + j), vm));
    hn::StoreU(p, d, srow + j);
    vsum = hn::Add(vsum, p);
  }
  if (rem) {
    const VF p = hn::IfThenElseZero(hn::FirstN(d, rem), hn::Exp(d, hn::Sub(hn::LoadU(d, srow + j), vm)));
    hn::StoreU(p, d, srow + j);
    vsum = hn::Add(vsum, p);
    j += N;
  }
  for (; j < width; ++j) srow[j] = 0.0f;
  l = l * alpha + ReduceSum(vsum);
  m = m_new;
}

// O[r][dc, dc + NV*N) = alpha[r] O[r][...] + sum_j P[r][j] V[kt0 + j][...] for the block's rows.
template <size_t MR, size_t NV>
HWY_INLINE void PvPass(const Geometry& g, const float* S, size_t nr, size_t kt0, size_t bk, Scratch& s,
                       size_t dc = 0) {
  float* O = s.o.get();
  for (size_t r0 = 0; r0 < nr; r0 += MR) {
    const size_t mr = std::min(MR, nr - r0);
    const float* a[MR];
    float* c[MR];
    for (size_t r = 0; r < MR; ++r) a[r] = S + (r0 + std::min(r, mr - 1)) * g.tile;
    for (size_t r = 0; r < mr; ++r) c[r] = O + (r0 + r) * g.hdp + dc;
    GemmTileRows<CMode::kScaleAdd, MR, NV>(mr, a, s.vp.get() + kt0 * g.hdp + dc, g.hdp, bk, c, nullptr,
                                           s.alpha.data() + r0);
  }
}

// Runs one block of nr rows over the packed keys [0, nk) (tile by tile), leaving the
// unnormalised output in s.o and the softmax state in s.m / s.l.
void RunBlock(const Geometry& g, const RowRefs& rows, size_t nr, size_t nk, Scratch& s) {
  const size_t NR = PanelWidth();
  float* S = s.s.get();
  float* O = s.o.get();
  std::fill(O, O + nr * g.hdp, 0.0f);
  std::fill(s.m.begin(), s.m.begin() + nr, kNegInf);
  std::fill(s.l.begin(), s.l.begin() + nr, 0.0f);
  size_t kend = 0;
  for (size_t r = 0; r < nr; ++r) kend = std::max(kend, std::min(rows.limit[r], nk));
  const size_t tile = g.tile;
  for (size_t kt0 = 0; kt0 < kend; kt0 += tile) {
    const size_t bk = std::min(tile, kend - kt0);
    const size_t panels = (bk + NR - 1) / NR;
    // S[r][0, panels * NR) = q_r · k_j.
#if HWY_TARGET == HWY_AVX3_DL
    if (g.int8_qk) {
      if (kt0 == 0) QuantizeQueries(g, rows, nr, s);
      ScoresInt8(g, rows, nr, nk, kt0, bk, s);  // with the u8 probabilities where int8_pv
    }
#endif
    for (size_t r0 = 0; r0 < nr && !g.int8_qk; r0 += kMR) {
      const size_t mr = std::min(kMR, nr - r0);
      const float* a[kMR];
      float* c[kMR];
      for (size_t r = 0; r < kMR; ++r) a[r] = rows.q[r0 + std::min(r, mr - 1)];
      for (size_t p = 0; p < panels; ++p) {
        for (size_t r = 0; r < mr; ++r) c[r] = S + (r0 + r) * g.tile + p * NR;
        GemmTileRows<CMode::kStore>(mr, a, s.kt.get() + (kt0 / NR + p) * g.hd * NR, NR, g.hd, c, nullptr,
                                    nullptr);
      }
    }
    for (size_t r = 0; r < nr && !(g.int8_qk && g.int8_pv); ++r) {
      const size_t valid = VisibleKeys(rows, r, nk, kt0, bk);
#if HWY_TARGET == HWY_AVX3_DL
      if (g.int8_pv) {
        SoftmaxRowU8(S + r * g.tile, valid, (bk + 3) / 4 * 4, g.scale, r, s);
        continue;
      }
#endif
      SoftmaxRow(S + r * g.tile, valid, panels * NR, g.scale, s.m[r], s.l[r], s.alpha[r]);
    }
    // O = alpha O + P V.
#if HWY_TARGET == HWY_AVX3_DL
    if (g.int8_pv) {
      PvInt8(g, s, nr, kt0, bk);
      continue;
    }
#endif
    switch (g.pv_nv) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
      case 1:
        PvPass<8, 1>(g, S, nr, kt0, bk, s);
        break;
      case 3:
        PvPass<6, 3>(g, S, nr, kt0, bk, s);
        break;
      case 5:
        PvPass<4, 5>(g, S, nr, kt0, bk, s);
        break;
#endif
      default:
        for (size_t dc = 0; dc < g.hdp; dc += NR) PvPass<kMR, 2>(g, S, nr, kt0, bk, s, dc);
        break;
    }
  }
}

// own_kv: false where the int8 key and value panels come from PackKvInt8's bytes instead.
void AllocScratch(const Geometry& g, size_t max_keys, Scratch& s, bool own_kv = true) {
  const size_t NR = PanelWidth();
  const size_t kpad = (max_keys + NR - 1) / NR * NR;
  // The fp32 K / V panels only where the int8 ones do not replace them.
  if (!g.int8_qk) s.kt = hwy::AllocateAligned<float>(std::max<size_t>(1, kpad * g.hd));
  if (!g.int8_qk) s.k32 = hwy::AllocateAligned<float>(NR * g.hd);
  if (!g.int8_pv) s.vp = hwy::AllocateAligned<float>(std::max<size_t>(1, kpad * g.hdp));
  s.s = hwy::AllocateAligned<float>(kBQ * kBK);
  s.o = hwy::AllocateAligned<float>(kBQ * g.hdp);
  s.m.resize(kBQ);
  s.l.resize(kBQ);
  s.alpha.resize(kBQ);
  if (g.int8_qk) {  // whole key tiles (zero panels past the keys), kScorePanels panels at a time
    const size_t hd4 = (g.hd + 3) / 4 * 4, keys = (max_keys + kBK - 1) / kBK * kBK;
    if (own_kv) {
      s.k8 = hwy::AllocateAligned<uint8_t>(keys * hd4);
      std::fill(s.k8.get(), s.k8.get() + keys * hd4, uint8_t{128});
      s.ks = hwy::AllocateAligned<float>(keys);
      std::fill(s.ks.get(), s.ks.get() + keys, 0.0f);
    }
    s.q8 = hwy::AllocateAligned<int8_t>(kBQ * hd4);
    s.k8p = s.k8.get(), s.ksp = s.ks.get();
  }
  if (g.int8_pv) {  // whole key tiles of value panels, zero past the keys
    const size_t dims = (g.hd + 15) / 16 * 16, keys = (max_keys + kBK - 1) / kBK * kBK;
    if (own_kv) {
      s.v8 = hwy::AllocateAligned<int8_t>(keys * dims);
      std::fill(s.v8.get(), s.v8.get() + keys * dims, int8_t{0});
      s.vs = hwy::AllocateAligned<float>(dims);
      s.vmu = hwy::AllocateAligned<float>(dims);
    }
    s.p8 = hwy::AllocateAligned<uint8_t>(kBQ * kBK);
    s.v8p = s.v8.get(), s.vsp = s.vs.get(), s.vmup = s.vmu.get();
  }
}

// The per-worker scratch of one Attention call. The fp32 path's is kept on the calling thread and
// reused while the geometry fits (a decode step calls Attention once per layer: per-call scratch
// was freed, trimmed and faulted in again every time); its panels are written whole each call
// (zero columns included). The int8 path's (the vision encoder's few large calls) is per call:
// its panels' neutral tails are filled once, at allocation.
struct ScratchSet {
  std::vector<Scratch> slots;
  size_t hd = 0, hdp = 0, keys = 0;  // what the slots were (or will be) allocated for
};
ScratchSet& CallScratch(const Geometry& g, size_t max_keys, size_t count, ScratchSet* per_call) {
  if (g.int8_qk || g.int8_pv) {
    per_call->slots.resize(count);
    per_call->keys = max_keys;
    return *per_call;
  }
  thread_local ScratchSet kept;
  if (kept.hd != g.hd || kept.hdp != g.hdp || kept.keys < max_keys || kept.slots.size() < count) {
    // A growing context reallocates every 1.5x, not every step.
    const size_t keys =
        kept.hd == g.hd && kept.hdp == g.hdp ? std::max(max_keys, kept.keys * 3 / 2) : max_keys;
    kept.slots.clear();
    kept.slots.resize(count);
    kept.hd = g.hd, kept.hdp = g.hdp, kept.keys = keys;
  }
  return kept;
}

// Row r of KV head kvh: its query pointer, output pointer and visible key count.
struct RowInfo {
  size_t i, head;
};
HWY_INLINE RowInfo RowOf(const Geometry& g, size_t kvh, size_t r) {
  return {r / g.group, kvh * g.group + r % g.group};
}
HWY_INLINE size_t LimitOf(const Geometry& g, size_t i) {
  return g.causal ? std::min(g.n_kv, g.kv_offset + i + 1) : g.n_kv;
}

void FillRows(const Geometry& g, const float* q, size_t kvh, size_t rb0, size_t nr, size_t k_lo,
              RowRefs& rows) {
  for (size_t r = 0; r < nr; ++r) {
    const RowInfo ri = RowOf(g, kvh, rb0 + r);
    rows.q[r] = q + ri.i * g.q_stride + ri.head * g.hd;
    const size_t lim = LimitOf(g, ri.i);
    rows.limit[r] = lim > k_lo ? lim - k_lo : 0;
  }
}

// Row blocks [b0, b1) of KV head kvh over its packed keys [0, nk), normalised into out.
void RunRowBlocks(const Geometry& g, const float* q, size_t kvh, size_t b0, size_t b1, size_t nk, Scratch& s,
                  float* out) {
  RowRefs rows;
  for (size_t b = b0; b < b1; ++b) {
    const size_t rb0 = b * kBQ, nr = std::min(kBQ, g.rows - rb0);
    FillRows(g, q, kvh, rb0, nr, 0, rows);
    RunBlock(g, rows, nr, nk, s);
    for (size_t r = 0; r < nr; ++r) {
      const RowInfo ri = RowOf(g, kvh, rb0 + r);
      float* o = out + ri.i * g.out_stride + ri.head * g.hd;
      const float inv = 1.0f / s.l[r];
      const float* src = s.o.get() + r * g.hdp;
      for (size_t dd = 0; dd < g.hd; ++dd) o[dd] = src[dd] * inv;
    }
  }
}

// Row blocks per task for nblk blocks of each of g.num_kv_heads heads: ~4 tasks per worker.
size_t BlocksPerTask(const Geometry& g, size_t nblk, size_t threads) {
  const size_t want = std::max<size_t>(1, (4 * threads + g.num_kv_heads - 1) / g.num_kv_heads);
  const size_t tasks_per_head = std::min(nblk, want);
  return (nblk + tasks_per_head - 1) / tasks_per_head;
}

// The kernel's geometry for `shape` (n_q > 0, num_heads > 0): sizes as size_t, the head width
// padded to whole panels, and on AVX-512 one wide P·V tile for heads of an odd number of vectors.
Geometry MakeGeometry(const AttentionShape& shape) {
  Geometry g;
  g.n_q = static_cast<size_t>(shape.n_q);
  g.n_kv = static_cast<size_t>(shape.n_kv);
  g.hd = static_cast<size_t>(shape.head_dim);
  const size_t NR = PanelWidth();
  g.hdp = (g.hd + NR - 1) / NR * NR;
  g.pv_nv = 0;
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  {
    // An odd number of vectors per head (80 = 5 x 16 floats) would waste a padded vector
    // per 2-vector panel: use one wide tile instead.
    const size_t N = hn::Lanes(DF()), nvec = (g.hd + N - 1) / N;
    if (nvec % 2 == 1 && nvec <= 5) {
      g.pv_nv = nvec;
      g.hdp = nvec * N;
    }
  }
#endif
  g.num_kv_heads = static_cast<size_t>(shape.num_kv_heads);
  g.group = static_cast<size_t>(shape.num_heads / shape.num_kv_heads);
  g.kv_offset = static_cast<size_t>(std::max<int64_t>(0, shape.n_kv - shape.n_q));
  g.q_stride = static_cast<size_t>(shape.q_stride);
  g.kv_stride = static_cast<size_t>(shape.kv_stride);
  g.shape = &shape;
  g.out_stride = static_cast<size_t>(shape.out_stride);
  g.causal = shape.causal;
  g.scale = shape.scale;
  g.rows = g.n_q * g.group;
  g.kv16 = shape.k_blocks16 != nullptr;
  g.int8_qk = shape.int8_qk && !shape.causal && !g.kv16 && HWY_TARGET == HWY_AVX3_DL;
  g.int8_pv = shape.int8_pv && !shape.causal && !g.kv16 && HWY_TARGET == HWY_AVX3_DL;
  g.tile = g.int8_qk || g.int8_pv ? kBK : kBK / 2;
  return g;
}

// Key ranges per KV head: more than one only when a KV head's rows fit one block (nblk == 1) and
// there are fewer heads than workers; each range keeps at least 256 keys.
size_t KeySplits(const Geometry& g, size_t nblk, size_t threads) {
  size_t splits = 1;
  if (nblk == 1 && g.num_kv_heads < threads) {
    splits = std::min((threads + g.num_kv_heads - 1) / g.num_kv_heads, std::max<size_t>(1, g.n_kv / 256));
  }
  return splits;
}

// Combines the split-key partials into `out`: task t = kvh * splits + sp holds, per row r, the
// unnormalised O (part_o, rows x hdp), running max m and sum l; ranges with no visible key
// (m = -inf) contribute nothing.
void MergeKeySplits(const Geometry& g, size_t splits, const std::vector<float>& part_o,
                    const std::vector<float>& part_m, const std::vector<float>& part_l, float* out) {
  for (size_t kvh = 0; kvh < g.num_kv_heads; ++kvh) {
    for (size_t r = 0; r < g.rows; ++r) {
      float mx = kNegInf;
      for (size_t sp = 0; sp < splits; ++sp) mx = std::max(mx, part_m[(kvh * splits + sp) * g.rows + r]);
      const RowInfo ri = RowOf(g, kvh, r);
      float* o = out + ri.i * g.out_stride + ri.head * g.hd;
      std::fill(o, o + g.hd, 0.0f);
      float l = 0.0f;
      for (size_t sp = 0; sp < splits; ++sp) {
        const size_t t = kvh * splits + sp;
        const float m = part_m[t * g.rows + r];
        if (m == kNegInf) continue;
        const float w = std::exp(m - mx);
        l += w * part_l[t * g.rows + r];
        const float* po = part_o.data() + (t * g.rows + r) * g.hdp;
        for (size_t dd = 0; dd < g.hd; ++dd) o[dd] += w * po[dd];
      }
      const float inv = 1.0f / l;
      for (size_t dd = 0; dd < g.hd; ++dd) o[dd] *= inv;
    }
  }
}

// The decode form (one row block): each task = KV head x a key range; the partial (O, m, l)
// are merged afterwards.
void AttentionSplitKeys(const Geometry& g, const float* q, const float* k, const float* v, size_t splits,
                        size_t threads, float* out, ThreadPool* pool) {
  const size_t span = (g.n_kv + splits - 1) / splits;
  const size_t tasks = g.num_kv_heads * splits;
  std::vector<float> part_o(tasks * g.rows * g.hdp), part_m(tasks * g.rows), part_l(tasks * g.rows);
  ScratchSet per_call;
  ScratchSet& scratch = CallScratch(g, span, std::min(threads, tasks), &per_call);
  RunTasks(pool, tasks, [&](size_t t, size_t slot) {
    Scratch& s = scratch.slots[slot];
    if (!s.s) AllocScratch(g, scratch.keys, s);
    const size_t kvh = t / splits, sp = t % splits;
    const size_t k_lo = sp * span, nk = std::min(g.n_kv, k_lo + span) - std::min(g.n_kv, k_lo);
    const size_t nr = g.rows;  // <= kBQ
    RowRefs rows;
    FillRows(g, q, kvh, 0, nr, k_lo, rows);
    if (nk > 0) {
      PackKeys(g, k, v, kvh, k_lo, nk, s);
#if HWY_TARGET == HWY_AVX3_DL
      if (g.int8_qk)
        PackKeysInt8(F32Rows{*g.shape, k, false, kvh, g.hd}, g.n_kv, g.hd, k_lo, nk, s.k8.get(), s.ks.get());
      if (g.int8_pv) {
        PackValuesInt8(F32Rows{*g.shape, v, true, kvh, g.hd}, g.n_kv, g.hd, k_lo, nk, s.v8.get(), s.vs.get(),
                       s.vmu.get());
      }
#endif
      RunBlock(g, rows, nr, nk, s);
    } else {
      std::fill(s.o.get(), s.o.get() + nr * g.hdp, 0.0f);
      std::fill(s.m.begin(), s.m.begin() + nr, kNegInf);
      std::fill(s.l.begin(), s.l.begin() + nr, 0.0f);
    }
    std::copy(s.o.get(), s.o.get() + nr * g.hdp, part_o.begin() + t * g.rows * g.hdp);
    std::copy(s.m.begin(), s.m.begin() + nr, part_m.begin() + t * g.rows);
    std::copy(s.l.begin(), s.l.begin() + nr, part_l.begin() + t * g.rows);
  });
  MergeKeySplits(g, splits, part_o, part_m, part_l, out);
}

#if HWY_TARGET == HWY_AVX3_DL
// One KV head of PackKvInt8's bytes, each part 64-byte aligned: the key panels of whole key tiles
// (keys past n_kv stored 128, i.e. zero), the key scales (zero past n_kv), the value panels (zero
// past n_kv), the per-dim value scales and means (16-padded).
struct PackedHead {
  size_t k8, ks, v8, vs, vmu, bytes;
  explicit PackedHead(size_t n_kv, size_t hd) {
    auto up = [](size_t n) { return (n + 63) / 64 * 64; };
    const size_t keys = (n_kv + kBK - 1) / kBK * kBK, hd4 = (hd + 3) / 4 * 4, dims = (hd + 15) / 16 * 16;
    k8 = 0;
    ks = k8 + up(keys * hd4);
    v8 = ks + up(keys * sizeof(float));
    vs = v8 + up(keys * dims);
    vmu = vs + up(dims * sizeof(float));
    bytes = vmu + up(dims * sizeof(float));
  }
};

// Packs KV head h of kv (n_kv keys of hd dims) into dst (PackedHead's layout).
void PackHead(const HalfKv& kv, size_t h, size_t n_kv, size_t hd, const PackedHead& L, uint8_t* dst) {
  std::fill(dst, dst + L.ks, uint8_t{128});
  std::fill(dst + L.ks, dst + L.bytes, uint8_t{0});
  const size_t rs = static_cast<size_t>(kv.row_stride), hs = static_cast<size_t>(kv.head_stride);
  PackKeysInt8(F16Rows{kv.k + h * hs, rs, hd}, n_kv, hd, 0, n_kv, dst + L.k8,
               reinterpret_cast<float*>(dst + L.ks));
  PackValuesInt8(F16Rows{kv.v + h * hs, rs, hd}, n_kv, hd, 0, n_kv, reinterpret_cast<int8_t*>(dst + L.v8),
                 reinterpret_cast<float*>(dst + L.vs), reinterpret_cast<float*>(dst + L.vmu));
}
#endif  // HWY_AVX3_DL

}  // namespace

size_t PackedKvHeadBytesImpl(const AttentionShape& s) {
#if HWY_TARGET == HWY_AVX3_DL
  return PackedHead(static_cast<size_t>(s.n_kv), static_cast<size_t>(s.head_dim)).bytes;
#else
  (void)s;
  return 0;
#endif
}

// Heads in rounds of as many as there are workers, each packed into a slot's buffer and copied to
// its place after the round (so a destination may overlap sources of heads up to its own).
void PackKvInt8Impl(const HalfKv& kv, const AttentionShape& s, uint8_t* dst, size_t dst_stride,
                    ThreadPool* pool) {
#if HWY_TARGET == HWY_AVX3_DL
  const size_t n_kv = static_cast<size_t>(s.n_kv), hd = static_cast<size_t>(s.head_dim);
  const size_t heads = static_cast<size_t>(s.num_kv_heads);
  const PackedHead L(n_kv, hd);
  pool = PoolFor(pool, 8 * n_kv * hd * heads);
  const size_t round = std::min(heads, NumWorkers(pool));
  // The round's buffers are kept between calls (grown, never shrunk; the calling thread owns
  // them): allocated per call they were fresh pages every layer of every image.
  // (A named reference: the workers' tasks would otherwise name their own threads' variables.)
  thread_local std::vector<hwy::AlignedFreeUniquePtr<uint8_t[]>> kept;
  thread_local std::vector<size_t> kept_bytes;
  std::vector<hwy::AlignedFreeUniquePtr<uint8_t[]>>& tmp = kept;
  if (kept.size() < round) {
    kept.resize(round);
    kept_bytes.resize(round, 0);
  }
  for (size_t t = 0; t < round; ++t) {
    if (kept_bytes[t] >= L.bytes) continue;
    kept[t] = hwy::AllocateAligned<uint8_t>(L.bytes);
    kept_bytes[t] = L.bytes;
  }
  for (size_t h0 = 0; h0 < heads; h0 += round) {
    const size_t n = std::min(round, heads - h0);
    RunTasks(pool, n, [&](size_t t, size_t) { PackHead(kv, h0 + t, n_kv, hd, L, tmp[t].get()); });
    for (size_t t = 0; t < n; ++t) std::memcpy(dst + (h0 + t) * dst_stride, tmp[t].get(), L.bytes);
  }
#else
  (void)kv, (void)s, (void)dst, (void)dst_stride, (void)pool;
#endif
}

// AttentionImpl's row-block tasks (no key splits) over PackKvInt8's bytes.
void AttentionPackedImpl(const float* q, const AttentionShape& shape, const uint8_t* packed, size_t stride,
                         float* out, ThreadPool* pool) {
#if HWY_TARGET == HWY_AVX3_DL
  if (shape.n_q <= 0 || shape.num_heads <= 0) return;
  const Geometry g = MakeGeometry(shape);
  if (g.n_kv == 0) {
    for (size_t i = 0; i < g.n_q; ++i)
      std::fill(out + i * g.out_stride, out + i * g.out_stride + g.hd * g.group * g.num_kv_heads, 0.0f);
    return;
  }
  const PackedHead L(g.n_kv, g.hd);
  pool = PoolFor(pool, 2 * g.n_q * g.n_kv * g.hd * g.group * g.num_kv_heads);
  const size_t threads = NumWorkers(pool);
  const size_t nblk = (g.rows + kBQ - 1) / kBQ;
  const size_t bpt = BlocksPerTask(g, nblk, threads);
  const size_t tph = (nblk + bpt - 1) / bpt;
  std::vector<Scratch> slots(std::min(threads, tph * g.num_kv_heads));
  RunTasks(pool, tph * g.num_kv_heads, [&](size_t t, size_t slot) {
    Scratch& s = slots[slot];
    if (!s.s) AllocScratch(g, g.n_kv, s, /*own_kv=*/false);
    const size_t kvh = t % g.num_kv_heads, tb = tph - 1 - t / g.num_kv_heads;
    const uint8_t* head = packed + kvh * stride;
    s.k8p = head + L.k8;
    s.ksp = reinterpret_cast<const float*>(head + L.ks);
    s.v8p = reinterpret_cast<const int8_t*>(head + L.v8);
    s.vsp = reinterpret_cast<const float*>(head + L.vs);
    s.vmup = reinterpret_cast<const float*>(head + L.vmu);
    RunRowBlocks(g, q, kvh, tb * bpt, std::min(nblk, (tb + 1) * bpt), g.n_kv, s, out);
  });
#else
  (void)q, (void)shape, (void)packed, (void)stride, (void)out, (void)pool;
#endif
}

bool AttentionInt8AvailableImpl() { return HWY_TARGET == HWY_AVX3_DL; }

// The quantizers as this target runs them (cpu_kernels.h), for the tests against ref::.
float AttentionInt8RowImpl(const float* x, int64_t n, int8_t* q8) {
#if HWY_TARGET == HWY_AVX3_DL
  return Int8Row(x, static_cast<size_t>(n), q8);
#else
  return ref::AttentionInt8Row(x, n, q8);
#endif
}

void AttentionInt8KeysImpl(const float* k, const AttentionShape& s, int64_t kvh, int64_t k_lo, int64_t nk,
                           int64_t stride, int8_t* k8, float* ks) {
#if HWY_TARGET == HWY_AVX3_DL
  const auto hd = static_cast<size_t>(s.head_dim);
  Int8Keys(F32Rows{s, k, false, static_cast<size_t>(kvh), hd}, static_cast<size_t>(s.n_kv), hd,
           static_cast<size_t>(k_lo), static_cast<size_t>(nk), static_cast<size_t>(stride), k8, ks);
#else
  ref::AttentionInt8Keys(k, s, kvh, k_lo, nk, stride, k8, ks);
#endif
}

void AttentionInt8ValuesImpl(const float* v, const AttentionShape& s, int64_t kvh, int64_t k_lo, int64_t nk,
                             int64_t stride, int8_t* v8, float* vs, float* mu) {
#if HWY_TARGET == HWY_AVX3_DL
  // Int8Values fills 16-padded vs and mu: give it room, hand back head_dim entries.
  const size_t padded = (static_cast<size_t>(s.head_dim) + 15) / 16 * 16;
  std::vector<float> vs16(padded), mu16(padded);
  const auto hd = static_cast<size_t>(s.head_dim);
  Int8Values(F32Rows{s, v, true, static_cast<size_t>(kvh), hd}, static_cast<size_t>(s.n_kv), hd,
             static_cast<size_t>(k_lo), static_cast<size_t>(nk), static_cast<size_t>(stride), v8, vs16.data(),
             mu16.data());
  std::copy(vs16.begin(), vs16.begin() + s.head_dim, vs);
  std::copy(mu16.begin(), mu16.begin() + s.head_dim, mu);
#else
  ref::AttentionInt8Values(v, s, kvh, k_lo, nk, stride, v8, vs, mu);
#endif
}

void AttentionImpl(const float* q, const float* k, const float* v, const AttentionShape& shape, float* out,
                   ThreadPool* pool) {
  if (shape.n_q <= 0 || shape.num_heads <= 0) return;
  const Geometry g = MakeGeometry(shape);
  if (g.n_kv == 0) {
    for (size_t i = 0; i < g.n_q; ++i)
      std::fill(out + i * g.out_stride, out + i * g.out_stride + g.hd * g.group * g.num_kv_heads, 0.0f);
    return;
  }

  pool = PoolFor(pool, 2 * g.n_q * g.n_kv * g.hd * g.group * g.num_kv_heads,
                 2 * g.n_kv * g.hd * g.num_kv_heads * sizeof(float));
  const size_t threads = NumWorkers(pool);
  const size_t nblk = (g.rows + kBQ - 1) / kBQ;
  const size_t splits = KeySplits(g, nblk, threads);

  if (splits == 1) {
    // Tasks: KV head × a range of row blocks; ~4 tasks per worker, heaviest (last rows) first.
    const size_t bpt = BlocksPerTask(g, nblk, threads);
    const size_t tph = (nblk + bpt - 1) / bpt;
    ScratchSet per_call;
    ScratchSet& scratch = CallScratch(g, g.n_kv, std::min(threads, tph * g.num_kv_heads), &per_call);
    RunTasks(pool, tph * g.num_kv_heads, [&](size_t t, size_t slot) {
      Scratch& s = scratch.slots[slot];
      if (!s.s) AllocScratch(g, scratch.keys, s);
      const size_t kvh = t % g.num_kv_heads, tb = tph - 1 - t / g.num_kv_heads;
      const size_t b0 = tb * bpt, b1 = std::min(nblk, b0 + bpt);
      const size_t r_last = std::min(g.rows, b1 * kBQ) - 1;
      const size_t nk = LimitOf(g, RowOf(g, kvh, r_last).i);
      PackKeys(g, k, v, kvh, 0, nk, s);
#if HWY_TARGET == HWY_AVX3_DL
      if (g.int8_qk)
        PackKeysInt8(F32Rows{*g.shape, k, false, kvh, g.hd}, g.n_kv, g.hd, 0, nk, s.k8.get(), s.ks.get());
      if (g.int8_pv) {
        PackValuesInt8(F32Rows{*g.shape, v, true, kvh, g.hd}, g.n_kv, g.hd, 0, nk, s.v8.get(), s.vs.get(),
                       s.vmu.get());
      }
#endif
      RunRowBlocks(g, q, kvh, b0, b1, nk, s, out);
    });
    return;
  }

  AttentionSplitKeys(g, q, k, v, splits, threads, out, pool);
}

}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace mineru
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mineru {
namespace kernels {
namespace cpu {

HWY_EXPORT(AttentionImpl);
HWY_EXPORT(AttentionInt8AvailableImpl);
HWY_EXPORT(AttentionInt8RowImpl);
HWY_EXPORT(AttentionInt8KeysImpl);
HWY_EXPORT(AttentionInt8ValuesImpl);
HWY_EXPORT(PackedKvHeadBytesImpl);
HWY_EXPORT(PackKvInt8Impl);
HWY_EXPORT(AttentionPackedImpl);

size_t PackedKvHeadBytes(const AttentionShape& s) { return HWY_DYNAMIC_DISPATCH(PackedKvHeadBytesImpl)(s); }

void PackKvInt8(const HalfKv& kv, const AttentionShape& s, uint8_t* dst, size_t dst_stride,
                ThreadPool* pool) {
  HWY_DYNAMIC_DISPATCH(PackKvInt8Impl)(kv, s, dst, dst_stride, pool);
}

void AttentionPacked(const float* q, const AttentionShape& s, const uint8_t* packed, size_t stride,
                     float* out, ThreadPool* pool) {
  HWY_DYNAMIC_DISPATCH(AttentionPackedImpl)(q, s, packed, stride, out, pool);
}

bool AttentionInt8Available() { return HWY_DYNAMIC_DISPATCH(AttentionInt8AvailableImpl)(); }

float AttentionInt8Row(const float* x, int64_t n, int8_t* q8) {
  return HWY_DYNAMIC_DISPATCH(AttentionInt8RowImpl)(x, n, q8);
}

void AttentionInt8Keys(const float* k, const AttentionShape& s, int64_t kvh, int64_t k_lo, int64_t nk,
                       int64_t stride, int8_t* k8, float* ks) {
  HWY_DYNAMIC_DISPATCH(AttentionInt8KeysImpl)(k, s, kvh, k_lo, nk, stride, k8, ks);
}

void AttentionInt8Values(const float* v, const AttentionShape& s, int64_t kvh, int64_t k_lo, int64_t nk,
                         int64_t stride, int8_t* v8, float* vs, float* mu) {
  HWY_DYNAMIC_DISPATCH(AttentionInt8ValuesImpl)(v, s, kvh, k_lo, nk, stride, v8, vs, mu);
}

void Attention(const float* q, const float* k, const float* v, const AttentionShape& s, float* out,
               ThreadPool* pool) {
  HWY_DYNAMIC_DISPATCH(AttentionImpl)(q, k, v, s, out, pool);
}

}  // namespace cpu
}  // namespace kernels
}  // namespace mineru
#endif  // HWY_ONCE
