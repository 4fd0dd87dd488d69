// kernels/cuda/attention_tile.cuh — staging a tile of bf16 rows into shared memory, shared by the
// two tensor-core forms of VarlenAttention (attention_tc.cu, attention_mma.cu). nvcc only.
#pragma once

#include <cuda_bf16.h>

#include <cstddef>
#include <cstdint>

namespace mineru {
namespace kernels {
namespace cuda {

// dst[r * ld + c] = src[r * stride + c] for r < rows, 0 for rows in [rows, tile_rows), c < D, by the
// kThreads threads of a block. kVec: 16 bytes (8 values) a load, for rows that start on 16-byte
// boundaries (src and stride aligned: the launchers check); element by element otherwise. dst rows
// (ld a multiple of 8) are always aligned.
template <int D, int kThreads, bool kVec>
__device__ __forceinline__ void LoadTileBf16(const __nv_bfloat16* src, int64_t stride, int rows,
                                             int tile_rows, __nv_bfloat16* dst, int ld) {
  if constexpr (kVec) {
    constexpr int kChunks = D / 8;
    for (int idx = threadIdx.x; idx < tile_rows * kChunks; idx += kThreads) {
      const int r = idx / kChunks, c = (idx % kChunks) * 8;
      uint4 v = make_uint4(0u, 0u, 0u, 0u);  // bf16 zeros
      if (r < rows) v = *reinterpret_cast<const uint4*>(src + r * stride + c);
      *reinterpret_cast<uint4*>(dst + r * ld + c) = v;
    }
  } else {
    for (int idx = threadIdx.x; idx < tile_rows * D; idx += kThreads) {
      const int r = idx / D, c = idx % D;
      dst[r * ld + c] = r < rows ? src[r * stride + c] : __float2bfloat16_rn(0.0f);
    }
  }
}

// As LoadTileBf16, but kVec copies go out as cp.async (16 bytes each, rows past `rows` zero-filled)
// and land only after CpAsyncCommit() and a CpAsyncWait<n>() that covers them, then a barrier;
// without kVec the copy is synchronous (the commit and wait then have nothing to wait for).
// Compute capability 8.0 or newer.
template <int D, int kThreads, bool kVec>
__device__ __forceinline__ void LoadTileBf16Async(const __nv_bfloat16* src, int64_t stride, int rows,
                                                  int tile_rows, __nv_bfloat16* dst, int ld) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (kVec) {
    constexpr int kChunks = D / 8;
    for (int idx = threadIdx.x; idx < tile_rows * kChunks; idx += kThreads) {
      const int r = idx / kChunks, c = (idx % kChunks) * 8;
      const uint32_t to = static_cast<uint32_t>(__cvta_generic_to_shared(dst + r * ld + c));
      // Rows past the end read nothing (source size 0) from a valid address and write zeros.
      const __nv_bfloat16* from = r < rows ? src + r * stride + c : src;
      const int bytes = r < rows ? 16 : 0;
      const size_t global = __cvta_generic_to_global(from);
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(to), "l"(global), "r"(bytes)
                   : "memory");
    }
    return;
  }
#endif
  LoadTileBf16<D, kThreads, false>(src, stride, rows, tile_rows, dst, ld);
}

__device__ __forceinline__ void CpAsyncCommit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most n of this thread's committed groups are still in flight.
template <int n>
__device__ __forceinline__ void CpAsyncWait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(n) : "memory");
#endif
}

}  // namespace cuda
}  // namespace kernels
}  // namespace mineru
