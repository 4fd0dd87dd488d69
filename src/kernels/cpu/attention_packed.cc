// kernels/cpu/attention_packed.cc — the packed int8 attention (kernels.h PackKvInt8 /
// AttentionPacked; AVX-512 VNNI target, nothing and 0 bytes on the others): the fp16 keys and
// values of every KV head quantized and packed once (attention_int8_pack.cc's packers), then the
// attention of query chunks over those bytes with attention.cc's row-block tasks. Not the int8
// tiles (attention_int8.cc) nor Attention itself.

// <immintrin.h> first, with GCC 12's false positive in it silenced (see the header).
#include "kernels/cpu/x86_intrinsics.h"  // IWYU pragma: keep

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/attention_packed.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>
#include <cstring>
#include <new>
#include <vector>

#include "hwy/aligned_allocator.h"
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

// Packs KV head h of kv (n_kv keys of hd dims) into dst (PackedHead's layout); staging: the calling
// worker's (PackValuesInt8).
void PackHead(const HalfKv& kv, size_t h, size_t n_kv, size_t hd, const PackedHead& L, uint8_t* dst,
              std::vector<int8_t>& staging) {
  std::fill(dst, dst + L.ks, uint8_t{128});
  std::fill(dst + L.ks, dst + L.bytes, uint8_t{0});
  const size_t rs = static_cast<size_t>(kv.row_stride), hs = static_cast<size_t>(kv.head_stride);
  PackKeysInt8(F16Rows{kv.k + h * hs, rs, hd}, n_kv, hd, 0, n_kv, dst + L.k8,
               reinterpret_cast<float*>(dst + L.ks));
  PackValuesInt8(F16Rows{kv.v + h * hs, rs, hd}, n_kv, hd, 0, n_kv, reinterpret_cast<int8_t*>(dst + L.v8),
                 reinterpret_cast<float*>(dst + L.vs), reinterpret_cast<float*>(dst + L.vmu), staging);
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

// Heads in rounds of as many as there are workers, each packed into a buffer of the context's
// scratch (round head t in slot t's KernelScratch::packed_head, grown, never shrunk: allocated per
// call they were fresh pages every layer of every image) and copied to its place after the round
// (so a destination may overlap sources of heads up to its own).
void PackKvInt8Impl(const HalfKv& kv, const AttentionShape& s, uint8_t* dst, size_t dst_stride,
                    const KernelContext& ctx) {
#if HWY_TARGET == HWY_AVX3_DL
  const size_t n_kv = static_cast<size_t>(s.n_kv), hd = static_cast<size_t>(s.head_dim);
  const size_t heads = static_cast<size_t>(s.num_kv_heads);
  const PackedHead L(n_kv, hd);
  ThreadPool* pool = PoolFor(ctx.pool(), 8 * n_kv * hd * heads);
  const size_t round = std::min(heads, NumWorkers(pool));
  for (size_t t = 0; t < round; ++t) {
    KernelScratch& k = ctx.scratch(t);
    if (k.packed_head_bytes >= L.bytes) continue;
    k.packed_head = hwy::AllocateAligned<uint8_t>(L.bytes);
    k.packed_head_bytes = k.packed_head ? L.bytes : 0;
    if (!k.packed_head) throw std::bad_alloc();
  }
  for (size_t h0 = 0; h0 < heads; h0 += round) {
    const size_t n = std::min(round, heads - h0);
    RunTasks(pool, n, [&](size_t t, size_t slot) {
      PackHead(kv, h0 + t, n_kv, hd, L, ctx.scratch(t).packed_head.get(), ctx.scratch(slot).values8);
    });
    for (size_t t = 0; t < n; ++t)
      std::memcpy(dst + (h0 + t) * dst_stride, ctx.scratch(t).packed_head.get(), L.bytes);
  }
#else
  (void)kv, (void)s, (void)dst, (void)dst_stride, (void)ctx;
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

}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace mineru
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mineru {
namespace kernels {
namespace cpu {

HWY_EXPORT(PackedKvHeadBytesImpl);
HWY_EXPORT(PackKvInt8Impl);
HWY_EXPORT(AttentionPackedImpl);

size_t PackedKvHeadBytes(const AttentionShape& s, const KernelConfig& config) {
  return MINERU_DISPATCH(config, PackedKvHeadBytesImpl)(s);
}

void PackKvInt8(const HalfKv& kv, const AttentionShape& s, uint8_t* dst, size_t dst_stride,
                const KernelContext& ctx) {
  MINERU_DISPATCH(ctx.config(), PackKvInt8Impl)(kv, s, dst, dst_stride, ctx);
}

void AttentionPacked(const float* q, const AttentionShape& s, const uint8_t* packed, size_t stride,
                     float* out, const KernelContext& ctx) {
  MINERU_DISPATCH(ctx.config(), AttentionPackedImpl)(q, s, packed, stride, out, ctx.pool());
}

}  // namespace cpu
}  // namespace kernels
}  // namespace mineru
#endif  // HWY_ONCE
