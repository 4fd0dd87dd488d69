// cli/bench_cuda_util.h — what the GPU benchmarks (bench_cuda.cc, bench_decode_cuda.cc,
// bench_attention_cuda.cc) share: a clock, best-of timing, random device data, the device as
// JSON. Included only where MINERU_HAVE_CUDA is set (it includes the CUDA backend's headers).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/bf16.h"
#include "base/status.h"
#include "kernels/cuda/buffer.h"
#include "kernels/cuda/device.h"

namespace mineru::cli::bench_cuda {

inline double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Best seconds of `reps` calls of f after one warm-up (each call waits for the stream itself).
template <typename F>
StatusOr<double> BestOf(int reps, F&& f) {
  MINERU_RETURN_IF_ERROR(f());
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const double t0 = Now();
    MINERU_RETURN_IF_ERROR(f());
    best = std::min(best, Now() - t0);
  }
  return best;
}

// Fills the first n elements of buf with values in [-1, 1) as T (fp32 or bf16), from the host.
// Random values: zeros draw less power, and a GPU may then clock higher than on real work.
template <typename T>
Status FillRandom(kernels::cuda::DeviceBuffer* buf, int64_t n, uint32_t seed = 12345) {
  std::vector<T> host(static_cast<size_t>(n));
  uint32_t s = seed;
  for (T& x : host) {
    s = s * 1664525u + 1013904223u;
    const float v = static_cast<float>(s >> 8) / static_cast<float>(1u << 24) * 2.0f - 1.0f;
    if constexpr (std::is_same_v<T, float>) {
      x = v;
    } else {
      x = T{F32ToBf16(v)};
    }
  }
  return buf->CopyFromHost(host.data(), host.size() * sizeof(T));
}

inline nlohmann::json DeviceJson(const kernels::cuda::CudaDeviceInfo& d) {
  return {{"name", d.name},
          {"description", kernels::cuda::DescribeCudaDevice(d)},
          {"compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
          {"sms", d.sm_count},
          {"memory_gib", d.total_bytes / 1073741824.0}};
}

}  // namespace mineru::cli::bench_cuda
