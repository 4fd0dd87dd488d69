// kernels/cpu/attention_block.cc — the fp32 block kernel of the CPU attention: a task's keys packed
// once (K^T into [keys/2N][head_dim][2N] panels, V into [keys][head_dim padded], fp16 keys and
// values widened as they are packed), then one block of query rows over them tile by tile: S = Q K^T
// (6×2N register tiles, the GEMM micro-kernel), the online softmax update (vectorized exp),
// O = alpha O + P V; and the per-worker scratch. Where the shape asks for int8 Q Kᵀ or P V the
// tiles are attention_int8.cc's. It does not cut the work into tasks (attention.cc).

// <immintrin.h> first, with GCC 12's false positive in it silenced (see the header).
#include "kernels/cpu/x86_intrinsics.h"  // IWYU pragma: keep

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/attention_block.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>
#include <cmath>

#include "base/bf16.h"
#include "hwy/aligned_allocator.h"
#include "hwy/cache_control.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "kernels/cpu/attention_internal-inl.h"
#include "kernels/cpu/simd-inl.h"

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

}  // namespace

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

namespace {

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

}  // namespace

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
void AllocScratch(const Geometry& g, size_t max_keys, Scratch& s, bool own_kv) {
  const size_t NR = PanelWidth();
  const size_t kpad = (max_keys + NR - 1) / NR * NR;
  size_t floats = 0, bytes = 0;  // what is allocated, for Scratch::bytes
  // The fp32 K / V panels only where the int8 ones do not replace them.
  if (!g.int8_qk) {
    s.kt = hwy::AllocateAligned<float>(std::max<size_t>(1, kpad * g.hd));
    s.k32 = hwy::AllocateAligned<float>(NR * g.hd);
    floats += std::max<size_t>(1, kpad * g.hd) + NR * g.hd;
  }
  if (!g.int8_pv) {
    s.vp = hwy::AllocateAligned<float>(std::max<size_t>(1, kpad * g.hdp));
    floats += std::max<size_t>(1, kpad * g.hdp);
  }
  s.s = hwy::AllocateAligned<float>(kBQ * kBK);
  s.o = hwy::AllocateAligned<float>(kBQ * g.hdp);
  s.m.resize(kBQ);
  s.l.resize(kBQ);
  s.alpha.resize(kBQ);
  floats += kBQ * kBK + kBQ * g.hdp + 3 * kBQ;
  if (g.int8_qk) {  // whole key tiles (zero panels past the keys), kScorePanels panels at a time
    const size_t hd4 = (g.hd + 3) / 4 * 4, keys = (max_keys + kBK - 1) / kBK * kBK;
    if (own_kv) {
      s.k8 = hwy::AllocateAligned<uint8_t>(keys * hd4);
      std::fill(s.k8.get(), s.k8.get() + keys * hd4, uint8_t{128});
      s.ks = hwy::AllocateAligned<float>(keys);
      std::fill(s.ks.get(), s.ks.get() + keys, 0.0f);
      bytes += keys * hd4, floats += keys;
    }
    s.q8 = hwy::AllocateAligned<int8_t>(kBQ * hd4);
    s.k8p = s.k8.get(), s.ksp = s.ks.get();
    bytes += kBQ * hd4;
  }
  if (g.int8_pv) {  // whole key tiles of value panels, zero past the keys
    const size_t dims = (g.hd + 15) / 16 * 16, keys = (max_keys + kBK - 1) / kBK * kBK;
    if (own_kv) {
      s.v8 = hwy::AllocateAligned<int8_t>(keys * dims);
      std::fill(s.v8.get(), s.v8.get() + keys * dims, int8_t{0});
      s.vs = hwy::AllocateAligned<float>(dims);
      s.vmu = hwy::AllocateAligned<float>(dims);
      bytes += keys * dims, floats += 2 * dims;
    }
    s.p8 = hwy::AllocateAligned<uint8_t>(kBQ * kBK);
    s.v8p = s.v8.get(), s.vsp = s.vs.get(), s.vmup = s.vmu.get();
    bytes += kBQ * kBK;
  }
  s.bytes = bytes + floats * sizeof(float);
}

}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace mineru
HWY_AFTER_NAMESPACE();
