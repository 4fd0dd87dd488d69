// kernels/cuda/device_math.cuh — device-side helpers shared by the .cu files of kernels/cuda:
// element loads/stores that widen to fp32, block-wide sums, launch geometry. nvcc only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/cuda/cuda_internal.h"
#include "kernels/cuda/cuda_ops.h"

namespace mineru {
namespace kernels {
namespace cuda {

// The device type of each host-visible element type: Bf16 is read as __nv_bfloat16 (same layout).
template <typename T>
struct DeviceType {
  using type = T;
};
template <>
struct DeviceType<Bf16> {
  using type = __nv_bfloat16;
};
static_assert(sizeof(__nv_bfloat16) == sizeof(Bf16), "Bf16 and __nv_bfloat16 differ in size");

template <typename T>
typename DeviceType<T>::type* ToDevice(T* p) {
  return reinterpret_cast<typename DeviceType<T>::type*>(p);
}
template <typename T>
const typename DeviceType<T>::type* ToDevice(const T* p) {
  return reinterpret_cast<const typename DeviceType<T>::type*>(p);
}

__device__ __forceinline__ float Load(const float* p) { return *p; }
__device__ __forceinline__ float Load(const __nv_bfloat16* p) { return __bfloat162float(*p); }
__device__ __forceinline__ void Store(float* p, float v) { *p = v; }
// Rounds to nearest even (as base/bf16.h's F32ToBf16).
__device__ __forceinline__ void Store(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }

constexpr int kWarpSize = 32;

__device__ __forceinline__ float WarpSum(float v) {
  for (int offset = kWarpSize / 2; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ float WarpMax(float v) {
  for (int offset = kWarpSize / 2; offset > 0; offset >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// The sum of v over the kThreads threads of the block, returned to every thread. Every thread of
// the block must call it (it synchronises); scratch is kThreads / 32 floats of shared memory,
// free again when it returns.
template <int kThreads>
__device__ __forceinline__ float BlockSum(float v, float* scratch) {
  static_assert(kThreads % kWarpSize == 0 && kThreads <= kWarpSize * kWarpSize, "block size");
  constexpr int kWarps = kThreads / kWarpSize;
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  v = WarpSum(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = WarpSum(lane < kWarps ? scratch[lane] : 0.0f);
  __syncthreads();  // every warp has read scratch before anyone writes it again
  return v;
}

// Thread blocks for a grid-stride loop over `work` items with `threads` per block: enough to fill
// any current GPU, at most max_blocks (the loop covers the rest).
inline unsigned GridBlocks(int64_t work, int threads, int64_t max_blocks) {
  int64_t blocks = (work + threads - 1) / threads;
  if (blocks > max_blocks) blocks = max_blocks;
  if (blocks < 1) blocks = 1;
  return static_cast<unsigned>(blocks);
}

// Lets `kernel` take `bytes` of dynamic shared memory: past the 48 KiB every launch may use, the
// kernel must opt in (up to the device's limit: 163 KiB on an A100, 227 KiB on an H100).
template <typename Kernel>
Status AllowSharedMemory(Kernel kernel, size_t bytes, const char* op) {
  constexpr size_t kDefaultLimit = 48 * 1024;
  if (bytes <= kDefaultLimit) return Status::Ok();
  return CudaStatus(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)),
      std::string(op) + ": " + std::to_string(bytes) + " bytes of shared memory");
}

}  // namespace cuda
}  // namespace kernels
}  // namespace mineru
