// kernels/cuda/norm.cu — RmsNorm and LayerNorm (cuda_ops.h): one thread block of kNormThreads per
// row, each thread summing a strided slice of the row in fp32, then a block-wide sum. Rows beyond
// the grid are taken by a row-stride loop (uniform per block, so every thread reaches the barriers).

#include "kernels/cuda/cuda_internal.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/device_math.cuh"

namespace mineru {
namespace kernels {
namespace cuda {
namespace {

constexpr int kNormThreads = 256;
constexpr int64_t kMaxNormBlocks = 1 << 16;

// y = weight * (x * inv), inv = 1 / sqrt(sum(x^2) / n + eps): the twin's order of operations.
template <typename T>
__global__ void __launch_bounds__(kNormThreads)
    RmsNormKernel(const T* x, int64_t m, int64_t n, const float* weight, float eps, T* y) {
  __shared__ float scratch[kNormThreads / kWarpSize];
  for (int64_t r = blockIdx.x; r < m; r += gridDim.x) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    float ss = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += kNormThreads) {
      const float v = Load(xr + i);
      ss += v * v;
    }
    ss = BlockSum<kNormThreads>(ss, scratch);
    const float inv = 1.0f / sqrtf(ss / static_cast<float>(n) + eps);
    // Each thread rewrites only the elements it read, after the barrier in BlockSum: y may equal x.
    for (int64_t i = threadIdx.x; i < n; i += kNormThreads) Store(yr + i, weight[i] * (Load(xr + i) * inv));
  }
}

// y = (x - mu) * inv * weight + bias, mu = mean(x), inv = 1 / sqrt(mean((x - mu)^2) + eps).
template <typename T>
__global__ void __launch_bounds__(kNormThreads)
    LayerNormKernel(const T* x, int64_t m, int64_t n, const float* weight, const float* bias, float eps,
                    T* y) {
  __shared__ float scratch[kNormThreads / kWarpSize];
  for (int64_t r = blockIdx.x; r < m; r += gridDim.x) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += kNormThreads) sum += Load(xr + i);
    const float mu = BlockSum<kNormThreads>(sum, scratch) / static_cast<float>(n);
    float sq = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += kNormThreads) {
      const float d = Load(xr + i) - mu;
      sq += d * d;
    }
    const float var = BlockSum<kNormThreads>(sq, scratch) / static_cast<float>(n);
    const float inv = 1.0f / sqrtf(var + eps);
    for (int64_t i = threadIdx.x; i < n; i += kNormThreads) {
      Store(yr + i, (Load(xr + i) - mu) * inv * weight[i] + bias[i]);
    }
  }
}

template <typename T>
Status LaunchRmsNorm(const T* x, int64_t m, int64_t n, const float* weight, float eps, T* y,
                     StreamHandle stream) {
  MINERU_RETURN_IF_ERROR(CheckSizes("RmsNorm", {m, n}));
  if (m == 0 || n == 0) return Status::Ok();
  MINERU_RETURN_IF_ERROR(CheckPointers("RmsNorm", {x, weight, y}));
  RmsNormKernel<<<GridBlocks(m, 1, kMaxNormBlocks), kNormThreads, 0, stream>>>(ToDevice(x), m, n, weight, eps,
                                                                               ToDevice(y));
  return LaunchStatus("RmsNorm");
}

template <typename T>
Status LaunchLayerNorm(const T* x, int64_t m, int64_t n, const float* weight, const float* bias, float eps,
                       T* y, StreamHandle stream) {
  MINERU_RETURN_IF_ERROR(CheckSizes("LayerNorm", {m, n}));
  if (m == 0 || n == 0) return Status::Ok();
  MINERU_RETURN_IF_ERROR(CheckPointers("LayerNorm", {x, weight, bias, y}));
  LayerNormKernel<<<GridBlocks(m, 1, kMaxNormBlocks), kNormThreads, 0, stream>>>(ToDevice(x), m, n, weight,
                                                                                 bias, eps, ToDevice(y));
  return LaunchStatus("LayerNorm");
}

}  // namespace

Status RmsNorm(const float* x, int64_t m, int64_t n, const float* weight, float eps, float* y,
               StreamHandle stream) {
  return LaunchRmsNorm(x, m, n, weight, eps, y, stream);
}
Status RmsNorm(const Bf16* x, int64_t m, int64_t n, const float* weight, float eps, Bf16* y,
               StreamHandle stream) {
  return LaunchRmsNorm(x, m, n, weight, eps, y, stream);
}

Status LayerNorm(const float* x, int64_t m, int64_t n, const float* weight, const float* bias, float eps,
                 float* y, StreamHandle stream) {
  return LaunchLayerNorm(x, m, n, weight, bias, eps, y, stream);
}
Status LayerNorm(const Bf16* x, int64_t m, int64_t n, const float* weight, const float* bias, float eps,
                 Bf16* y, StreamHandle stream) {
  return LaunchLayerNorm(x, m, n, weight, bias, eps, y, stream);
}

}  // namespace cuda
}  // namespace kernels
}  // namespace mineru
