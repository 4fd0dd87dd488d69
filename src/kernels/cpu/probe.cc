// kernels/cpu/probe.cc — machine probes for `bench --workload peak`: the fp32 fused multiply-add
// throughput of one thread and the bandwidth of streaming reads, on the dispatched SIMD target.
// What the vision profile's GFLOP/s are compared against.

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/probe.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/dispatch.h"

HWY_BEFORE_NAMESPACE();
namespace mineru {
namespace kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Eight independent accumulators (enough to cover the FMA latency of every target), each
// acc = acc * m + a in every lane, `iters` times; every lane follows the same recurrence.
ProbeResult FmaProbeImpl(int64_t iters, float start) {
  const hn::ScalableTag<float> d;
  const auto m = hn::Set(d, 0.999f), a = hn::Set(d, 0.001f);
  auto v0 = hn::Set(d, start), v1 = v0, v2 = v0, v3 = v0, v4 = v0, v5 = v0, v6 = v0, v7 = v0;
  for (int64_t i = 0; i < iters; ++i) {
    v0 = hn::MulAdd(v0, m, a);
    v1 = hn::MulAdd(v1, m, a);
    v2 = hn::MulAdd(v2, m, a);
    v3 = hn::MulAdd(v3, m, a);
    v4 = hn::MulAdd(v4, m, a);
    v5 = hn::MulAdd(v5, m, a);
    v6 = hn::MulAdd(v6, m, a);
    v7 = hn::MulAdd(v7, m, a);
  }
  // All accumulators hold the same value: combining them keeps the compiler from dropping any.
  const auto all =
      hn::Min(hn::Min(hn::Min(v0, v1), hn::Min(v2, v3)), hn::Min(hn::Min(v4, v5), hn::Min(v6, v7)));
  ProbeResult r;
  r.value = hn::GetLane(all);
  r.flops = 2.0 * 8.0 * static_cast<double>(hn::Lanes(d)) * static_cast<double>(iters);
  return r;
}

// Sum of x[0, n) read once, front to back (four vector accumulators, then the tail).
double ReadProbeImpl(const float* x, int64_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d), count = static_cast<size_t>(n);
  auto s0 = hn::Zero(d), s1 = s0, s2 = s0, s3 = s0;
  size_t i = 0;
  for (; i + 4 * N <= count; i += 4 * N) {
    s0 = hn::Add(s0, hn::LoadU(d, x + i));
    s1 = hn::Add(s1, hn::LoadU(d, x + i + N));
    s2 = hn::Add(s2, hn::LoadU(d, x + i + 2 * N));
    s3 = hn::Add(s3, hn::LoadU(d, x + i + 3 * N));
  }
  double sum = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3))));
  for (; i < count; ++i) sum += x[i];
  return sum;
}

}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace mineru
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mineru {
namespace kernels {
namespace cpu {

HWY_EXPORT(FmaProbeImpl);
HWY_EXPORT(ReadProbeImpl);

ProbeResult FmaProbe(int64_t iters, float start, const KernelConfig& config) {
  return MINERU_DISPATCH(config, FmaProbeImpl)(iters, start);
}
double ReadProbe(const float* x, int64_t n, const KernelConfig& config) {
  return MINERU_DISPATCH(config, ReadProbeImpl)(x, n);
}

}  // namespace cpu
}  // namespace kernels
}  // namespace mineru
#endif  // HWY_ONCE
