// kernels/cpu/attention_int8_pack.cc — the int8 attention's quantizers and panel packing, on the
// AVX-512 VNNI target (AVX3_DL): Q per row, K per key and V per dim, centred and scaled as
// ref::AttentionInt8Row / Keys / Values do (kernels/reference.h), bit for bit, and laid out as
// the vpdpbusd panels attention_int8.cc's tiles read; and the quantizers' entry points of
// cpu_kernels.h for the tests (the ref:: twins on the other targets). Not the tiles themselves,
// nor what calls them (attention_block.cc, attention.cc, attention_packed.cc).

// <immintrin.h> first, with GCC 12's false positive in it silenced (see the header).
#include "kernels/cpu/x86_intrinsics.h"  // IWYU pragma: keep

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/attention_int8_pack.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>
#include <vector>

#include "hwy/highway.h"
#include "kernels/cpu/attention_internal-inl.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/reference.h"

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

}  // namespace

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

// Packs values [k_lo, k_lo + nk) of one KV head (n_kv in all) as int8 panels (Int8Values
// quantizes): key quad jq, vector dv, lane c, byte b = value of key 4 jq + b, dim 16 dv + c; the
// per-dim scales and means into vs and mu (16-padded). Quads past nk are left as they are (the
// caller keeps them zero).
template <class Rows>
void PackValuesInt8(const Rows& rows, size_t n_kv, size_t hd, size_t k_lo, size_t nk, int8_t* dst, float* vs,
                    float* mu, std::vector<int8_t>& staging) {
  const size_t nvec = (hd + kDimLanes - 1) / kDimLanes, stride = nvec * kDimLanes;
  // The worker's staging rows, kept between calls (assign zero-fills without reallocating): a
  // fresh vector per head was fresh pages per head, faulted in by its zero fill (~half a MB at
  // 5,476 keys).
  std::vector<int8_t>& v8 = staging;
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

// The row sources packed from: the fp32 keys and values of Attention (attention.cc) and the fp16
// heads of PackKvInt8 (attention_packed.cc).
template void PackKeysInt8<F32Rows>(const F32Rows&, size_t, size_t, size_t, size_t, uint8_t*, float*);
template void PackKeysInt8<F16Rows>(const F16Rows&, size_t, size_t, size_t, size_t, uint8_t*, float*);
template void PackValuesInt8<F32Rows>(const F32Rows&, size_t, size_t, size_t, size_t, int8_t*, float*, float*,
                                      std::vector<int8_t>&);
template void PackValuesInt8<F16Rows>(const F16Rows&, size_t, size_t, size_t, size_t, int8_t*, float*, float*,
                                      std::vector<int8_t>&);
#endif  // HWY_AVX3_DL

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

}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace mineru
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mineru {
namespace kernels {
namespace cpu {

HWY_EXPORT(AttentionInt8RowImpl);
HWY_EXPORT(AttentionInt8KeysImpl);
HWY_EXPORT(AttentionInt8ValuesImpl);

float AttentionInt8Row(const float* x, int64_t n, int8_t* q8, const KernelConfig& config) {
  return MINERU_DISPATCH(config, AttentionInt8RowImpl)(x, n, q8);
}

void AttentionInt8Keys(const float* k, const AttentionShape& s, int64_t kvh, int64_t k_lo, int64_t nk,
                       int64_t stride, int8_t* k8, float* ks, const KernelConfig& config) {
  MINERU_DISPATCH(config, AttentionInt8KeysImpl)(k, s, kvh, k_lo, nk, stride, k8, ks);
}

void AttentionInt8Values(const float* v, const AttentionShape& s, int64_t kvh, int64_t k_lo, int64_t nk,
                         int64_t stride, int8_t* v8, float* vs, float* mu, const KernelConfig& config) {
  MINERU_DISPATCH(config, AttentionInt8ValuesImpl)(v, s, kvh, k_lo, nk, stride, v8, vs, mu);
}

}  // namespace cpu
}  // namespace kernels
}  // namespace mineru
#endif  // HWY_ONCE
