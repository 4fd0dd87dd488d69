// kernels/cpu/probe_x86.cc — the dot-product probes of `bench --workload peak`: the throughput
// of one thread on the CPU's reduced-precision dot-product instructions, AVX-512 BF16 vdpbf16ps
// and AVX-512 VNNI vpdpbusd, measured like FmaProbe (8 independent accumulators). Not Highway
// targets: plain functions with target attributes, run only where CPUID reports the feature.

#include <cstdint>

#include "kernels/cpu/cpu_kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MINERU_X86_DOT_PROBES 1
#if !defined(__clang__)  // GCC 12's AVX-512 headers: see x86_intrinsics.h
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>
#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

namespace mineru {
namespace kernels {
namespace cpu {

#if MINERU_X86_DOT_PROBES
namespace {

// acc += 1.0 * 0.5 + 1.0 * 0.5 per lane and instruction (exact in fp32 below 2^24).
__attribute__((target("avx512f,avx512bf16"))) float Bf16Loop(int64_t iters) {
  const __m512bh a = (__m512bh)_mm512_set1_epi32(0x3f803f80), b = (__m512bh)_mm512_set1_epi32(0x3f003f00);
  __m512 v0 = _mm512_setzero_ps(), v1 = v0, v2 = v0, v3 = v0, v4 = v0, v5 = v0, v6 = v0, v7 = v0;
  for (int64_t i = 0; i < iters; ++i) {
    v0 = _mm512_dpbf16_ps(v0, a, b);
    v1 = _mm512_dpbf16_ps(v1, a, b);
    v2 = _mm512_dpbf16_ps(v2, a, b);
    v3 = _mm512_dpbf16_ps(v3, a, b);
    v4 = _mm512_dpbf16_ps(v4, a, b);
    v5 = _mm512_dpbf16_ps(v5, a, b);
    v6 = _mm512_dpbf16_ps(v6, a, b);
    v7 = _mm512_dpbf16_ps(v7, a, b);
  }
  const __m512 all = _mm512_min_ps(_mm512_min_ps(_mm512_min_ps(v0, v1), _mm512_min_ps(v2, v3)),
                                   _mm512_min_ps(_mm512_min_ps(v4, v5), _mm512_min_ps(v6, v7)));
  return _mm512_reduce_min_ps(all);
}

// acc += 4 products 1 x 1 per int32 lane and instruction.
__attribute__((target("avx512f,avx512vnni"))) int32_t Int8Loop(int64_t iters) {
  const __m512i a = _mm512_set1_epi8(1), b = _mm512_set1_epi8(1);
  __m512i v0 = _mm512_setzero_si512(), v1 = v0, v2 = v0, v3 = v0, v4 = v0, v5 = v0, v6 = v0, v7 = v0;
  for (int64_t i = 0; i < iters; ++i) {
    v0 = _mm512_dpbusd_epi32(v0, a, b);
    v1 = _mm512_dpbusd_epi32(v1, a, b);
    v2 = _mm512_dpbusd_epi32(v2, a, b);
    v3 = _mm512_dpbusd_epi32(v3, a, b);
    v4 = _mm512_dpbusd_epi32(v4, a, b);
    v5 = _mm512_dpbusd_epi32(v5, a, b);
    v6 = _mm512_dpbusd_epi32(v6, a, b);
    v7 = _mm512_dpbusd_epi32(v7, a, b);
  }
  const __m512i all = _mm512_min_epi32(_mm512_min_epi32(_mm512_min_epi32(v0, v1), _mm512_min_epi32(v2, v3)),
                                       _mm512_min_epi32(_mm512_min_epi32(v4, v5), _mm512_min_epi32(v6, v7)));
  return _mm512_reduce_min_epi32(all);
}

}  // namespace

DotProbeResult DotProbe(DotKind kind, int64_t iters) {
  DotProbeResult r;
  const bool bf16 = kind == DotKind::kBf16;
  r.ok = __builtin_cpu_supports("avx512f") &&
         (bf16 ? __builtin_cpu_supports("avx512bf16") : __builtin_cpu_supports("avx512vnni"));
  if (!r.ok) return r;
  r.value = bf16 ? static_cast<double>(Bf16Loop(iters)) : static_cast<double>(Int8Loop(iters));
  // 16 lanes x 8 accumulators; per lane 2 (bf16) or 4 (int8) products, each a multiply and an add.
  r.ops = 2.0 * (bf16 ? 2.0 : 4.0) * 16.0 * 8.0 * static_cast<double>(iters);
  return r;
}

#else

DotProbeResult DotProbe(DotKind, int64_t) { return DotProbeResult{}; }

#endif

}  // namespace cpu
}  // namespace kernels
}  // namespace mineru
