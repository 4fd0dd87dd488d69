// kernels/cuda/cuda_internal.h — CUDA runtime errors as Status, and the argument checks the ops
// share. Internal to kernels/cuda (it includes the CUDA runtime API header); included by its .cc
// files (compiled by the host compiler) and its .cu files (nvcc).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <initializer_list>
#include <string>

#include "base/status.h"

namespace mineru {
namespace kernels {
namespace cuda {

// Ok for cudaSuccess; otherwise "<what>: <error name> (<error text>)" as OutOfMemory (an allocation
// failed), Unavailable (no device, no or too old a driver, device busy or lost: the machine cannot
// run CUDA now), InvalidArgument (the runtime refused an argument) or Internal (anything else, a
// fault inside a kernel included).
Status CudaStatus(cudaError_t err, const std::string& what);

// The status of the kernel launch just queued on this thread (cudaGetLastError, which also clears
// a non-sticky error), named after `op`.
Status LaunchStatus(const char* op);

// InvalidArgument naming `op` when any size is negative or a pointer is null with work to do.
Status CheckSizes(const char* op, std::initializer_list<int64_t> sizes);
Status CheckPointers(const char* op, std::initializer_list<const void*> pointers);

// InvalidArgument naming `op` unless num_heads >= 1, num_kv_heads >= 1 divides it, and head_dim is in
// [1, max_head_dim] (the attention ops' head layout, attention.h).
Status CheckAttentionHeads(const char* op, int64_t num_heads, int64_t num_kv_heads, int64_t head_dim,
                           int64_t max_head_dim);

}  // namespace cuda
}  // namespace kernels
}  // namespace mineru
