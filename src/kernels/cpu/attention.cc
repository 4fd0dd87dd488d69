// kernels/cpu/attention.cc — the CPU Attention entry point: tiled online-softmax ("flash")
// attention for all shapes: vision (non-causal, thousands of patches), causal prefill and decode
// (n_q = 1). This file holds the kernel's geometry and cuts the work into tasks (and, for
// decode, key ranges merged afterwards); the block kernel is attention_block.cc, the int8 tiles
// attention_int8.cc, their quantizers attention_int8_pack.cc, the packed form attention_packed.cc
// (shared types: attention_internal-inl.h).
//
// Work is organised per KV head: the query rows of all heads sharing it (GQA group) are
// one list of rows r -> (query i = r / group, head = kv_head * group + r % group), cut into
// blocks of kBQ rows. A task = one KV head × a range of row blocks (or, when there are too
// few rows to keep the workers busy, × a range of keys, merged afterwards). A task packs the
// keys it needs once — K^T into [keys/2N][head_dim][2N] panels and V into [keys][head_dim
// padded] — then for each row block walks key tiles (Geometry::tile keys): S = Q K^T (6×2N register tiles,
// the GEMM micro-kernel), the online softmax update (vectorized exp), O = alpha O + P V.

// <immintrin.h> first, with GCC 12's false positive in it silenced (see the header).
#include "kernels/cpu/x86_intrinsics.h"  // IWYU pragma: keep

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/attention.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>
#include <cmath>
#include <vector>

#include "hwy/highway.h"
#include "kernels/cpu/attention_internal-inl.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/scratch.h"
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

// The block scratch of the workers of one Attention call over up to max_keys keys per task. The
// fp32 path's is each worker's kept one (KernelScratch::attention), reused while the geometry fits
// (a decode step calls Attention once per layer: per-call scratch was freed, trimmed and faulted in
// again every time); its panels are written whole each call (zero columns included). The int8
// path's (the vision encoder's few large calls) is per call, `count` slots: its panels' neutral
// tails are filled once, at allocation.
class CallScratch {
 public:
  CallScratch(const Geometry& g, size_t max_keys, size_t count, const KernelContext& ctx)
      : g_(g), max_keys_(max_keys), ctx_(ctx) {
    if (g.int8_qk || g.int8_pv) per_call_.resize(count);
  }
  // Worker slot `slot`'s scratch, allocated for the call's geometry (by that worker).
  Scratch& Slot(size_t slot) {
    if (!per_call_.empty()) {
      Scratch& s = per_call_[slot];
      if (!s.s) AllocScratch(g_, max_keys_, s);
      return s;
    }
    cpu::KeptAttention& kept = ctx_.scratch(slot).attention;
    const bool same = kept.target == HWY_TARGET && kept.hd == g_.hd && kept.hdp == g_.hdp;
    if (!same || kept.keys < max_keys_) {
      // A growing context reallocates every 1.5x, not every step.
      const size_t keys = same ? std::max(max_keys_, kept.keys * 3 / 2) : max_keys_;
      kept = cpu::KeptAttention();
      AllocScratch(g_, keys, kept.s);
      kept.target = HWY_TARGET, kept.hd = g_.hd, kept.hdp = g_.hdp, kept.keys = keys;
    }
    return kept.s;
  }

 private:
  const Geometry& g_;
  const size_t max_keys_;
  const KernelContext& ctx_;
  std::vector<Scratch> per_call_;
};

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

}  // namespace

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

namespace {

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
                        size_t threads, float* out, ThreadPool* pool, const KernelContext& ctx) {
  const size_t span = (g.n_kv + splits - 1) / splits;
  const size_t tasks = g.num_kv_heads * splits;
  std::vector<float> part_o(tasks * g.rows * g.hdp), part_m(tasks * g.rows), part_l(tasks * g.rows);
  CallScratch scratch(g, span, std::min(threads, tasks), ctx);
  RunTasks(pool, tasks, [&](size_t t, size_t slot) {
    Scratch& s = scratch.Slot(slot);
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
                       s.vmu.get(), ctx.scratch(slot).values8);
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

}  // namespace

void AttentionImpl(const float* q, const float* k, const float* v, const AttentionShape& shape, float* out,
                   const KernelContext& ctx) {
  if (shape.n_q <= 0 || shape.num_heads <= 0) return;
  const Geometry g = MakeGeometry(shape);
  if (g.n_kv == 0) {
    for (size_t i = 0; i < g.n_q; ++i)
      std::fill(out + i * g.out_stride, out + i * g.out_stride + g.hd * g.group * g.num_kv_heads, 0.0f);
    return;
  }

  ThreadPool* pool = PoolFor(ctx.pool(), 2 * g.n_q * g.n_kv * g.hd * g.group * g.num_kv_heads,
                             2 * g.n_kv * g.hd * g.num_kv_heads * sizeof(float));
  const size_t threads = NumWorkers(pool);
  const size_t nblk = (g.rows + kBQ - 1) / kBQ;
  const size_t splits = KeySplits(g, nblk, threads);

  if (splits == 1) {
    // Tasks: KV head × a range of row blocks; ~4 tasks per worker, heaviest (last rows) first.
    const size_t bpt = BlocksPerTask(g, nblk, threads);
    const size_t tph = (nblk + bpt - 1) / bpt;
    CallScratch scratch(g, g.n_kv, std::min(threads, tph * g.num_kv_heads), ctx);
    RunTasks(pool, tph * g.num_kv_heads, [&](size_t t, size_t slot) {
      Scratch& s = scratch.Slot(slot);
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
                       s.vmu.get(), ctx.scratch(slot).values8);
      }
#endif
      RunRowBlocks(g, q, kvh, b0, b1, nk, s, out);
    });
    return;
  }

  AttentionSplitKeys(g, q, k, v, splits, threads, out, pool, ctx);
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

void Attention(const float* q, const float* k, const float* v, const AttentionShape& s, float* out,
               const KernelContext& ctx) {
  MINERU_DISPATCH(ctx.config(), AttentionImpl)(q, k, v, s, out, ctx);
}

}  // namespace cpu
}  // namespace kernels
}  // namespace mineru
#endif  // HWY_ONCE
