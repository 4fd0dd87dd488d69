// kernels/cpu/elementwise.cc — SIMD norms (RmsNorm, LayerNorm), activations (QuickGelu,
// GeluErf, SiluMul) with vectorized exp (hwy/contrib/math) and erfc, rotate-half RoPE and
// weight-row widening. Memory-bound ops: parallel over row/element chunks when given a pool.

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/elementwise.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>
#include <cmath>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/simd-inl.h"
#include "kernels/quant.h"

HWY_BEFORE_NAMESPACE();
namespace mineru {
namespace kernels {
namespace HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;

// Applies fn(begin, end) over [0, n) in chunks (in parallel when worthwhile).
template <class Fn>
void ForChunks(size_t n, size_t min_chunk, ThreadPool* pool, const Fn& fn) {
  const size_t chunk = ChunkSize(n, pool, min_chunk, 1);
  const size_t tasks = (n + chunk - 1) / chunk;
  RunTasks(pool, tasks, [&](size_t t, size_t) { fn(t * chunk, std::min(n, (t + 1) * chunk)); });
}

// Elementwise map over [0, n) with a vector body and the same body on a zero-padded tail.
template <class VecFn>
HWY_INLINE void MapTail(const float* in0, const float* in1, float* out, size_t n, const VecFn& f) {
  const DF d;
  const size_t N = hn::Lanes(d);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    hn::StoreU(f(hn::LoadU(d, in0 + i), in1 ? hn::LoadU(d, in1 + i) : hn::Zero(d)), d, out + i);
  }
  if (i < n) {
    alignas(64) float a[64] = {0}, b[64] = {0}, o[64];
    std::copy(in0 + i, in0 + n, a);
    if (in1) std::copy(in1 + i, in1 + n, b);
    hn::Store(f(hn::Load(d, a), hn::Load(d, b)), d, o);
    std::copy(o, o + (n - i), out + i);
  }
}

// exp(x) for x <= 88 (larger inputs are clamped; callers only divide by 1 + exp).
HWY_INLINE VF ExpClamped(VF x) {
  const DF d;
  return hn::Exp(d, hn::Min(x, hn::Set(d, 88.0f)));
}

// erfc(z) for z >= 0, relative error < 1.2e-7 (Chebyshev fit, Numerical Recipes §6.2).
HWY_INLINE VF ErfcNonNeg(VF z) {
  const DF d;
  const VF t = hn::Div(hn::Set(d, 1.0f), hn::MulAdd(hn::Set(d, 0.5f), z, hn::Set(d, 1.0f)));
  VF p = hn::Set(d, 0.17087277f);
  p = hn::MulAdd(p, t, hn::Set(d, -0.82215223f));
  p = hn::MulAdd(p, t, hn::Set(d, 1.48851587f));
  p = hn::MulAdd(p, t, hn::Set(d, -1.13520398f));
  p = hn::MulAdd(p, t, hn::Set(d, 0.27886807f));
  p = hn::MulAdd(p, t, hn::Set(d, -0.18628806f));
  p = hn::MulAdd(p, t, hn::Set(d, 0.09678418f));
  p = hn::MulAdd(p, t, hn::Set(d, 0.37409196f));
  p = hn::MulAdd(p, t, hn::Set(d, 1.00002368f));
  p = hn::MulAdd(p, t, hn::Set(d, -1.26551223f));
  const VF arg = hn::Sub(p, hn::Mul(z, z));
  return hn::Mul(t, hn::Exp(d, arg));
}

}  // namespace

void RmsNormImpl(const float* x, int64_t m, int64_t n64, const float* weight, float eps, float* y,
                 ThreadPool* pool) {
  const size_t n = static_cast<size_t>(n64);
  const size_t min_rows = std::max<size_t>(1, 16384 / std::max<size_t>(1, n));
  ForChunks(static_cast<size_t>(m), min_rows, pool, [&](size_t r0, size_t r1) {
    const DF d;
    const size_t N = hn::Lanes(d);
    for (size_t r = r0; r < r1; ++r) {
      const float* xr = x + r * n;
      float* yr = y + r * n;
      VF s0 = hn::Zero(d), s1 = hn::Zero(d);
      size_t i = 0;
      for (; i + 2 * N <= n; i += 2 * N) {
        const VF a = hn::LoadU(d, xr + i), b = hn::LoadU(d, xr + i + N);
        s0 = hn::MulAdd(a, a, s0);
        s1 = hn::MulAdd(b, b, s1);
      }
      float ss = ReduceSum(hn::Add(s0, s1));
      for (; i < n; ++i) ss += xr[i] * xr[i];
      const float inv = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
      const VF vinv = hn::Set(d, inv);
      i = 0;
      for (; i + N <= n; i += N) {
        hn::StoreU(hn::Mul(hn::LoadU(d, weight + i), hn::Mul(hn::LoadU(d, xr + i), vinv)), d, yr + i);
      }
      for (; i < n; ++i) yr[i] = weight[i] * (xr[i] * inv);
    }
  });
}

void LayerNormImpl(const float* x, int64_t m, int64_t n64, const float* weight, const float* bias, float eps,
                   float* y, ThreadPool* pool) {
  const size_t n = static_cast<size_t>(n64);
  const size_t min_rows = std::max<size_t>(1, 16384 / std::max<size_t>(1, n));
  ForChunks(static_cast<size_t>(m), min_rows, pool, [&](size_t r0, size_t r1) {
    const DF d;
    const size_t N = hn::Lanes(d);
    for (size_t r = r0; r < r1; ++r) {
      const float* xr = x + r * n;
      float* yr = y + r * n;
      // Two passes in fp32 with 2 vector accumulators (the reference accumulates in double).
      VF s0 = hn::Zero(d), s1 = hn::Zero(d);
      size_t i = 0;
      for (; i + 2 * N <= n; i += 2 * N) {
        s0 = hn::Add(s0, hn::LoadU(d, xr + i));
        s1 = hn::Add(s1, hn::LoadU(d, xr + i + N));
      }
      float sum = ReduceSum(hn::Add(s0, s1));
      for (; i < n; ++i) sum += xr[i];
      const float mu = sum / static_cast<float>(n);
      const VF vmu = hn::Set(d, mu);
      s0 = hn::Zero(d);
      s1 = hn::Zero(d);
      i = 0;
      for (; i + 2 * N <= n; i += 2 * N) {
        const VF a = hn::Sub(hn::LoadU(d, xr + i), vmu), b = hn::Sub(hn::LoadU(d, xr + i + N), vmu);
        s0 = hn::MulAdd(a, a, s0);
        s1 = hn::MulAdd(b, b, s1);
      }
      float var = ReduceSum(hn::Add(s0, s1));
      for (; i < n; ++i) var += (xr[i] - mu) * (xr[i] - mu);
      var /= static_cast<float>(n);
      const float inv = 1.0f / std::sqrt(var + eps);
      const VF vinv = hn::Set(d, inv);
      i = 0;
      for (; i + N <= n; i += N) {
        const VF t = hn::Mul(hn::Sub(hn::LoadU(d, xr + i), vmu), vinv);
        hn::StoreU(hn::MulAdd(t, hn::LoadU(d, weight + i), hn::LoadU(d, bias + i)), d, yr + i);
      }
      for (; i < n; ++i) yr[i] = (xr[i] - mu) * inv * weight[i] + bias[i];
    }
  });
}

void QuickGeluImpl(float* x, int64_t n, ThreadPool* pool) {
  ForChunks(static_cast<size_t>(n), 1 << 15, pool, [&](size_t b, size_t e) {
    const DF d;
    const VF one = hn::Set(d, 1.0f), k = hn::Set(d, -1.702f);
    MapTail(x + b, nullptr, x + b, e - b,
            [&](VF v, VF) { return hn::Div(v, hn::Add(one, ExpClamped(hn::Mul(k, v)))); });
  });
}

void GeluErfImpl(float* x, int64_t n, ThreadPool* pool) {
  ForChunks(static_cast<size_t>(n), 1 << 15, pool, [&](size_t b, size_t e) {
    const DF d;
    const VF half = hn::Set(d, 0.5f), one = hn::Set(d, 1.0f), rsqrt2 = hn::Set(d, 0.70710678118654752f);
    MapTail(x + b, nullptr, x + b, e - b, [&](VF v, VF) {
      // x >= 0: x (1 - erfc(z)/2); x < 0: x erfc(z)/2, with z = |x| / sqrt 2.
      const VF ec = hn::Mul(half, ErfcNonNeg(hn::Mul(hn::Abs(v), rsqrt2)));
      const VF f = hn::IfThenElse(hn::Lt(v, hn::Zero(d)), ec, hn::Sub(one, ec));
      return hn::Mul(v, f);
    });
  });
}

void SiluMulImpl(const float* gate, const float* up, int64_t n, float* out, ThreadPool* pool) {
  ForChunks(static_cast<size_t>(n), 1 << 15, pool, [&](size_t b, size_t e) {
    const DF d;
    const VF one = hn::Set(d, 1.0f);
    MapTail(gate + b, up + b, out + b, e - b,
            [&](VF g, VF u) { return hn::Mul(hn::Div(g, hn::Add(one, ExpClamped(hn::Neg(g)))), u); });
  });
}

void AddInPlaceImpl(float* x, const float* dx, int64_t n, ThreadPool* pool) {
  ForChunks(static_cast<size_t>(n), 1 << 15, pool, [&](size_t b, size_t e) {
    MapTail(x + b, dx + b, x + b, e - b, [](VF a, VF c) { return hn::Add(a, c); });
  });
}

void RopeRotateHalfImpl(float* x, int64_t head_dim, const float* cos, const float* sin) {
  const DF d;
  const size_t N = hn::Lanes(d);
  const size_t half = static_cast<size_t>(head_dim / 2);
  size_t i = 0;
  for (; i + N <= half; i += N) {
    const VF a = hn::LoadU(d, x + i), b = hn::LoadU(d, x + i + half);
    const VF c0 = hn::LoadU(d, cos + i), s0 = hn::LoadU(d, sin + i);
    const VF c1 = hn::LoadU(d, cos + i + half), s1 = hn::LoadU(d, sin + i + half);
    hn::StoreU(hn::Sub(hn::Mul(a, c0), hn::Mul(b, s0)), d, x + i);
    hn::StoreU(hn::Add(hn::Mul(b, c1), hn::Mul(a, s1)), d, x + i + half);
  }
  for (; i < half; ++i) {
    const float a = x[i], b = x[i + half];
    x[i] = a * cos[i] - b * sin[i];
    x[i + half] = b * cos[i + half] + a * sin[i + half];
  }
}

void RopeRotateHalfRowsImpl(float* x, int64_t n, int64_t x_stride, int64_t num_heads, int64_t head_dim,
                            const float* cos, const float* sin, ThreadPool* pool) {
  const size_t min_rows =
      std::max<size_t>(1, 16384 / static_cast<size_t>(std::max<int64_t>(1, num_heads * head_dim)));
  ForChunks(static_cast<size_t>(n), min_rows, pool, [&](size_t r0, size_t r1) {
    for (size_t i = r0; i < r1; ++i) {
      for (int64_t h = 0; h < num_heads; ++h) {
        RopeRotateHalfImpl(x + i * x_stride + h * head_dim, head_dim, cos + i * head_dim, sin + i * head_dim);
      }
    }
  });
}

void WeightRowToF32Impl(const WeightView& w, int64_t row, float* out) {
  if (w.quantized()) {
    DequantizeRow(w, row, out);
    return;
  }
  const size_t esize = w.dtype == DType::kF32 ? 4 : 2;
  const uint8_t* base = static_cast<const uint8_t*>(w.data) + static_cast<size_t>(row) * w.cols * esize;
  WidenDenseChunk(w.dtype, base, 0, static_cast<size_t>(w.cols), out);
}

// Vectorised where Highway's DemoteTo to f16 rounds to nearest even (x86 with F16C); its
// emulation elsewhere truncates, so other targets convert with the scalar function.
void ToF16RowsImpl(const float* x, int64_t rows, int64_t cols, int64_t x_stride, uint16_t* out,
                   int64_t out_stride, ThreadPool* pool) {
  const size_t n = static_cast<size_t>(cols);
  const size_t min_rows = std::max<size_t>(1, 16384 / std::max<size_t>(1, n));
  ForChunks(static_cast<size_t>(rows), min_rows, pool, [&](size_t r0, size_t r1) {
    for (size_t i = r0; i < r1; ++i) {
      const float* src = x + i * static_cast<size_t>(x_stride);
      uint16_t* dst = out + i * static_cast<size_t>(out_stride);
      size_t j = 0;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)
      const DF d;
      const hn::Rebind<hwy::float16_t, DF> dh;
      const size_t N = hn::Lanes(d);
      const VF lo = hn::Set(d, -65504.0f), hi = hn::Set(d, 65504.0f);
      for (; j + N <= n; j += N) {
        // x86 max/min return their second operand when either is NaN: x last keeps a NaN.
        const VF v = hn::Min(hi, hn::Max(lo, hn::LoadU(d, src + j)));
        hn::StoreU(hn::DemoteTo(dh, v), dh, reinterpret_cast<hwy::float16_t*>(dst + j));
      }
#endif
      for (; j < n; ++j) dst[j] = F32ToF16(std::clamp(src[j], -65504.0f, 65504.0f));
    }
  });
}

const char* TargetNameImpl() { return hwy::TargetName(HWY_TARGET); }

}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace mineru
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mineru {
namespace kernels {
namespace cpu {

HWY_EXPORT(RmsNormImpl);
HWY_EXPORT(LayerNormImpl);
HWY_EXPORT(QuickGeluImpl);
HWY_EXPORT(GeluErfImpl);
HWY_EXPORT(SiluMulImpl);
HWY_EXPORT(AddInPlaceImpl);
HWY_EXPORT(RopeRotateHalfImpl);
HWY_EXPORT(RopeRotateHalfRowsImpl);
HWY_EXPORT(WeightRowToF32Impl);
HWY_EXPORT(TargetNameImpl);
HWY_EXPORT(ToF16RowsImpl);

void ToF16Rows(const float* x, int64_t rows, int64_t cols, int64_t x_stride, uint16_t* out,
               int64_t out_stride, const KernelContext& ctx) {
  MINERU_DISPATCH(ctx.config(), ToF16RowsImpl)(x, rows, cols, x_stride, out, out_stride, ctx.pool());
}

void RmsNorm(const float* x, int64_t m, int64_t n, const float* weight, float eps, float* y,
             const KernelContext& ctx) {
  MINERU_DISPATCH(ctx.config(), RmsNormImpl)(x, m, n, weight, eps, y, ctx.pool());
}
void LayerNorm(const float* x, int64_t m, int64_t n, const float* weight, const float* bias, float eps,
               float* y, const KernelContext& ctx) {
  MINERU_DISPATCH(ctx.config(), LayerNormImpl)(x, m, n, weight, bias, eps, y, ctx.pool());
}
void QuickGelu(float* x, int64_t n, const KernelContext& ctx) {
  MINERU_DISPATCH(ctx.config(), QuickGeluImpl)(x, n, ctx.pool());
}
void GeluErf(float* x, int64_t n, const KernelContext& ctx) {
  MINERU_DISPATCH(ctx.config(), GeluErfImpl)(x, n, ctx.pool());
}
void SiluMul(const float* gate, const float* up, int64_t n, float* out, const KernelContext& ctx) {
  MINERU_DISPATCH(ctx.config(), SiluMulImpl)(gate, up, n, out, ctx.pool());
}
void AddInPlace(float* x, const float* d, int64_t n, const KernelContext& ctx) {
  MINERU_DISPATCH(ctx.config(), AddInPlaceImpl)(x, d, n, ctx.pool());
}
void RopeRotateHalf(float* x, int64_t head_dim, const float* cos, const float* sin,
                    const KernelConfig& config) {
  MINERU_DISPATCH(config, RopeRotateHalfImpl)(x, head_dim, cos, sin);
}
void RopeRotateHalfRows(float* x, int64_t n, int64_t x_stride, int64_t num_heads, int64_t head_dim,
                        const float* cos, const float* sin, const KernelContext& ctx) {
  MINERU_DISPATCH(ctx.config(), RopeRotateHalfRowsImpl)
  (x, n, x_stride, num_heads, head_dim, cos, sin, ctx.pool());
}
void WeightRowToF32(const WeightView& w, int64_t row, float* out, const KernelConfig& config) {
  MINERU_DISPATCH(config, WeightRowToF32Impl)(w, row, out);
}
const char* DispatchedTargetName(const KernelConfig& config) {
  return MINERU_DISPATCH(config, TargetNameImpl)();
}

std::vector<int64_t> SupportedCompiledTargets() {
  // Highway 1.0.3's SupportedTargets() adds the vector-length-specific ARM targets (SVE2_128,
  // SVE_256) to what it returns after its own choice of target: the list is complete (the
  // dispatch here never reads Highway's choice).
  return hwy::SupportedAndGeneratedTargets();
}

int64_t BestTarget() {
  // Read once: the CPU's features never change (and CPUID can trap to the hypervisor).
  static const int64_t best = [] {
    const std::vector<int64_t> targets = SupportedCompiledTargets();
    return targets.empty() ? int64_t{HWY_STATIC_TARGET} : targets.front();
  }();
  return best;
}

}  // namespace cpu
}  // namespace kernels
}  // namespace mineru
#endif  // HWY_ONCE
