// kernels/cuda/kv_cache.cu — StoreKvRows, GatherKvRows and GatherRows (kv_cache.h): grid-stride
// loops over (row, element) items, one element per thread per step; an element is copied as its
// bits (the types of source and destination are the same).

#include <string>

#include "kernels/cuda/cuda_internal.h"
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/kv_cache.h"

namespace mineru {
namespace kernels {
namespace cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 4096;

__device__ __forceinline__ int64_t FirstIndex() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t GridStride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// The offset of slot s's row in the cache.
__device__ __forceinline__ int64_t SlotOffset(const PagedKvLayout& L, int32_t s) {
  return static_cast<int64_t>(s / L.block_size) * L.block_stride +
         static_cast<int64_t>(s % L.block_size) * L.row_stride;
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    StoreKvKernel(const T* k, int64_t k_stride, const T* v, int64_t v_stride, int64_t n, const int32_t* slots,
                  PagedKvLayout L, T* kc, T* vc) {
  const int64_t total = n * L.kv_dim;
  for (int64_t t = FirstIndex(); t < total; t += GridStride()) {
    const int64_t r = t / L.kv_dim, j = t % L.kv_dim;
    const int64_t at = SlotOffset(L, slots[r]) + j;
    kc[at] = k[r * k_stride + j];
    vc[at] = v[r * v_stride + j];
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    GatherKvKernel(const T* kc, const T* vc, PagedKvLayout L, const int32_t* slots, int64_t n, T* ko, T* vo) {
  const int64_t total = n * L.kv_dim;
  for (int64_t t = FirstIndex(); t < total; t += GridStride()) {
    const int64_t r = t / L.kv_dim, j = t % L.kv_dim;
    const int64_t at = SlotOffset(L, slots[r]) + j;
    ko[t] = kc[at];
    vo[t] = vc[at];
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    GatherRowsKernel(const T* src, int64_t src_stride, const int32_t* rows, int64_t n, int64_t cols, T* dst) {
  const int64_t total = n * cols;
  for (int64_t t = FirstIndex(); t < total; t += GridStride()) {
    const int64_t r = t / cols, j = t % cols;
    dst[t] = src[static_cast<int64_t>(rows[r]) * src_stride + j];
  }
}

Status CheckLayout(const char* op, const PagedKvLayout& L) {
  MINERU_RETURN_IF_ERROR(CheckSizes(op, {L.block_stride, L.row_stride, L.kv_dim}));
  if (L.block_size <= 0) return InvalidArgumentError(std::string(op) + ": block_size must be positive");
  if (L.row_stride < L.kv_dim) {
    return InvalidArgumentError(std::string(op) + ": row_stride " + std::to_string(L.row_stride) +
                                " < kv_dim " + std::to_string(L.kv_dim));
  }
  return Status::Ok();
}

template <typename T>
Status LaunchStore(const T* k, int64_t k_stride, const T* v, int64_t v_stride, int64_t n,
                   const int32_t* slots, const PagedKvLayout& L, T* kc, T* vc, StreamHandle stream) {
  const char* op = "StoreKvRows";
  MINERU_RETURN_IF_ERROR(CheckSizes(op, {k_stride, v_stride, n}));
  MINERU_RETURN_IF_ERROR(CheckLayout(op, L));
  if (k_stride < L.kv_dim || v_stride < L.kv_dim) {
    return InvalidArgumentError("StoreKvRows: a row stride is below kv_dim");
  }
  if (n == 0 || L.kv_dim == 0) return Status::Ok();
  MINERU_RETURN_IF_ERROR(CheckPointers(op, {k, v, slots, kc, vc}));
  StoreKvKernel<<<GridBlocks(n * L.kv_dim, kThreads, kMaxBlocks), kThreads, 0, stream>>>(
      ToDevice(k), k_stride, ToDevice(v), v_stride, n, slots, L, ToDevice(kc), ToDevice(vc));
  return LaunchStatus(op);
}

template <typename T>
Status LaunchGatherKv(const T* kc, const T* vc, const PagedKvLayout& L, const int32_t* slots, int64_t n,
                      T* ko, T* vo, StreamHandle stream) {
  const char* op = "GatherKvRows";
  MINERU_RETURN_IF_ERROR(CheckSizes(op, {n}));
  MINERU_RETURN_IF_ERROR(CheckLayout(op, L));
  if (n == 0 || L.kv_dim == 0) return Status::Ok();
  MINERU_RETURN_IF_ERROR(CheckPointers(op, {kc, vc, slots, ko, vo}));
  GatherKvKernel<<<GridBlocks(n * L.kv_dim, kThreads, kMaxBlocks), kThreads, 0, stream>>>(
      ToDevice(kc), ToDevice(vc), L, slots, n, ToDevice(ko), ToDevice(vo));
  return LaunchStatus(op);
}

template <typename T>
Status LaunchGatherRows(const T* src, int64_t src_stride, const int32_t* rows, int64_t n, int64_t cols,
                        T* dst, StreamHandle stream) {
  const char* op = "GatherRows";
  MINERU_RETURN_IF_ERROR(CheckSizes(op, {src_stride, n, cols}));
  if (src_stride < cols) return InvalidArgumentError("GatherRows: src_stride is below cols");
  if (n == 0 || cols == 0) return Status::Ok();
  MINERU_RETURN_IF_ERROR(CheckPointers(op, {src, rows, dst}));
  GatherRowsKernel<<<GridBlocks(n * cols, kThreads, kMaxBlocks), kThreads, 0, stream>>>(
      ToDevice(src), src_stride, rows, n, cols, ToDevice(dst));
  return LaunchStatus(op);
}

}  // namespace

Status StoreKvRows(const float* k, int64_t k_stride, const float* v, int64_t v_stride, int64_t n,
                   const int32_t* slots, const PagedKvLayout& layout, float* k_cache, float* v_cache,
                   StreamHandle stream) {
  return LaunchStore(k, k_stride, v, v_stride, n, slots, layout, k_cache, v_cache, stream);
}
Status StoreKvRows(const Bf16* k, int64_t k_stride, const Bf16* v, int64_t v_stride, int64_t n,
                   const int32_t* slots, const PagedKvLayout& layout, Bf16* k_cache, Bf16* v_cache,
                   StreamHandle stream) {
  return LaunchStore(k, k_stride, v, v_stride, n, slots, layout, k_cache, v_cache, stream);
}

Status GatherKvRows(const float* k_cache, const float* v_cache, const PagedKvLayout& layout,
                    const int32_t* slots, int64_t n, float* k_out, float* v_out, StreamHandle stream) {
  return LaunchGatherKv(k_cache, v_cache, layout, slots, n, k_out, v_out, stream);
}
Status GatherKvRows(const Bf16* k_cache, const Bf16* v_cache, const PagedKvLayout& layout,
                    const int32_t* slots, int64_t n, Bf16* k_out, Bf16* v_out, StreamHandle stream) {
  return LaunchGatherKv(k_cache, v_cache, layout, slots, n, k_out, v_out, stream);
}

Status GatherRows(const float* src, int64_t src_stride, const int32_t* rows, int64_t n, int64_t cols,
                  float* dst, StreamHandle stream) {
  return LaunchGatherRows(src, src_stride, rows, n, cols, dst, stream);
}
Status GatherRows(const Bf16* src, int64_t src_stride, const int32_t* rows, int64_t n, int64_t cols,
                  Bf16* dst, StreamHandle stream) {
  return LaunchGatherRows(src, src_stride, rows, n, cols, dst, stream);
}

}  // namespace cuda
}  // namespace kernels
}  // namespace mineru
