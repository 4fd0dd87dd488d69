// kernels/cuda/gemm.h — the matrix products on the GPU through cuBLASLt: y = x W^T (+ bias), the
// GPU twin of kernels::MatMul, callable from ordinary C++ (this header includes no CUDA header).
//
// Layouts are the CPU kernels': row-major and contiguous, x [m, k], W [n, k] (a WeightView's rows
// are the output features), y [m, n], bias [n] (fp32, or null). Products accumulate in fp32:
//   - bf16 x and W, bf16 y (rounded once, to nearest even) or fp32 y (the LM head's logits);
//   - fp32 x, W and y (the fp32 precision path the golden tests use): fp32 arithmetic, never TF32.
// The bias is added to the fp32 sum before the rounding, in cuBLASLt's epilogue where the library
// offers one for the call, else by the own kernel AddBiasRows after the product (a bf16 y then
// holds the sum rounded twice; the GemmHandle says which path the last call took).
// Pointers are device pointers with no alignment beyond the element's own; x and W must not
// overlap y. Queued on `stream` (nullptr: the legacy default stream), returning at once.
// InvalidArgument for negative sizes or null pointers with work to do (checked before anything
// is queued); m == 0 or n == 0 queues nothing; k == 0 gives y = bias (or 0).
//
// Linking: mineru_kernels_cuda links cuBLAS and cuBLASLt dynamically (libcublasLt.so.13 and
// libcublas.so.13, half a gigabyte between them, are found where the target machine's CUDA 13
// runtime has them; cmake/mineru_cuda.cmake), and only in CUDA builds.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "kernels/cuda/buffer.h"
#include "kernels/cuda/cuda_ops.h"

namespace mineru {
namespace kernels {
namespace cuda {

// One cuBLASLt handle and its workspace, owned by the caller (one per thread that queues products;
// a handle must not be used from two threads at once). Move-only; the destructor releases both.
class GemmHandle {
 public:
  static constexpr size_t kDefaultWorkspaceBytes = size_t{32} << 20;

  GemmHandle() = default;
  ~GemmHandle();
  GemmHandle(GemmHandle&& other) noexcept;
  GemmHandle& operator=(GemmHandle&& other) noexcept;
  GemmHandle(const GemmHandle&) = delete;
  GemmHandle& operator=(const GemmHandle&) = delete;

  // A handle on the calling thread's current device, with `workspace_bytes` of device workspace for
  // cuBLASLt's algorithms (more lets it pick faster ones for large products). Unavailable without a
  // usable device or when cuBLASLt cannot start; OutOfMemory when the workspace cannot be had.
  static StatusOr<GemmHandle> Create(size_t workspace_bytes = kDefaultWorkspaceBytes);

  bool valid() const { return lt_ != nullptr; }
  // Tests: add the bias with AddBiasRows even where the epilogue could (both paths get checked).
  void set_fuse_bias(bool fuse) { fuse_bias_ = fuse; }
  // Whether the last product with a bias added it in cuBLASLt's epilogue.
  bool last_bias_fused() const { return last_bias_fused_; }

  // Internal to gemm.cc: the cuBLASLt handle (cublasLtHandle_t) and the workspace.
  void* lt() const { return lt_; }
  const DeviceBuffer& workspace() const { return workspace_; }
  bool fuse_bias() const { return fuse_bias_; }
  void note_bias_fused(bool fused) { last_bias_fused_ = fused; }

 private:
  void Release();

  void* lt_ = nullptr;
  DeviceBuffer workspace_;
  bool fuse_bias_ = true;
  bool last_bias_fused_ = false;
};

// y [m, n] = x [m, k] W[n, k]^T (+ bias [n]); see the header comment. Twin: ref::MatMul in fp32.
Status MatMul(GemmHandle& h, const Bf16* x, int64_t m, int64_t k, const Bf16* w, int64_t n, const float* bias,
              Bf16* y, StreamHandle stream = nullptr);
Status MatMul(GemmHandle& h, const Bf16* x, int64_t m, int64_t k, const Bf16* w, int64_t n, const float* bias,
              float* y, StreamHandle stream = nullptr);
Status MatMul(GemmHandle& h, const float* x, int64_t m, int64_t k, const float* w, int64_t n,
              const float* bias, float* y, StreamHandle stream = nullptr);

}  // namespace cuda
}  // namespace kernels
}  // namespace mineru
