// model/cuda/device_weights.h — model weights resident in GPU memory, uploaded once from the
// mapped (or quantized) host views. Plain C++: no CUDA header (kernels/cuda's headers are plain).
//
// Matrices travel in the precision the CUDA model runs in (CudaPrecision): bf16 (the serving path:
// half the bytes, tensor-core products) or fp32 (the path the golden tests run, exact to the
// reference's arithmetic up to summation order). Vectors (norm weights, biases) are always fp32,
// as the CUDA ops take them (kernels/cuda/cuda_ops.h). A quantized host view (q8/q4) is
// dequantized row by row on upload: the GPU runs the dequantized values in bf16 or fp32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/context.h"
#include "kernels/cuda/buffer.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/kernels.h"

namespace mineru {

enum class CudaPrecision { kBf16, kF32 };

// "bf16" or "fp32".
const char* CudaPrecisionName(CudaPrecision p);
// Parses "bf16" / "fp32" (also "f32"); InvalidArgument otherwise.
StatusOr<CudaPrecision> ParseCudaPrecision(const std::string& name);
// Bytes of one element of a matrix or activation in precision p (2 or 4).
size_t CudaElementBytes(CudaPrecision p);

// One weight matrix [rows, cols], row-major, in the device buffer as bf16 (kernels::cuda::Bf16) or
// fp32 (float). Owns its device memory (move-only through DeviceBuffer).
struct DeviceMatrix {
  kernels::cuda::DeviceBuffer buf;
  int64_t rows = 0, cols = 0;
  CudaPrecision precision = CudaPrecision::kBf16;

  // The elements as T: T must be the precision's type (float for kF32, Bf16 for kBf16); a
  // mismatch is a programming error and gives nullptr.
  template <typename T>
  const T* as() const {
    const bool f32 = precision == CudaPrecision::kF32;
    return (sizeof(T) == 4) == f32 ? buf.as<T>() : nullptr;
  }
};

// Uploads w (any host format WeightRowToF32 reads: f32/bf16/f16 or quantized) as precision p,
// through a bounded host staging buffer (a few MiB, not the whole matrix). Synchronous.
// OutOfMemory when the device cannot hold it; Unavailable without a device.
StatusOr<DeviceMatrix> UploadMatrix(const WeightView& w, CudaPrecision p,
                                    const kernels::KernelConfig& config);

// Uploads the matrices of `parts` stacked by rows into one [sum of rows, cols] matrix (the
// decoder's q, k and v products as one). Every part must have the same cols (InvalidArgument).
StatusOr<DeviceMatrix> UploadStacked(const std::vector<const WeightView*>& parts, CudaPrecision p,
                                     const kernels::KernelConfig& config);

// Uploads fp32 values as they are. Synchronous; an empty vector gives an empty buffer.
StatusOr<kernels::cuda::DeviceBuffer> UploadFloats(const std::vector<float>& v);

// A device buffer that grows to the largest size asked of it and keeps that memory between calls
// (the activations of one encoder or runner). Not thread-safe.
class GrowingBuffer {
 public:
  // At least `bytes` bytes (the old contents are not kept when it grows).
  Status Reserve(size_t bytes);
  void* data() const { return buf_.data(); }
  template <typename T>
  T* as() const {
    return buf_.as<T>();
  }
  size_t size() const { return buf_.size(); }
  // The buffer itself, for copies (its size is what Reserve last grew it to).
  kernels::cuda::DeviceBuffer& buffer() { return buf_; }
  void Release() { buf_ = kernels::cuda::DeviceBuffer(); }

 private:
  kernels::cuda::DeviceBuffer buf_;
};

}  // namespace mineru
