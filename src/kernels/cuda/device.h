// kernels/cuda/device.h — which CUDA devices this process can use, asked without aborting.
//
// Plain C++ (no CUDA header): the engine and the CLI ask here before they choose a device. No
// function aborts when there is no NVIDIA driver, no GPU, or a driver older than the CUDA runtime
// linked in (cudart is linked statically: a binary needs only the driver, libcuda.so.1, which the
// runtime loads when first used). Errors are Status values (kUnavailable: no usable device).
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace mineru {
namespace kernels {
namespace cuda {

// The number of CUDA devices this process sees (CUDA_VISIBLE_DEVICES applies); 0 when there is none
// or CUDA cannot start. With reason non-null, *reason is set to why the count is 0 (one line: the
// runtime's error name and text), or cleared when it is not.
int CudaDeviceCount(std::string* reason = nullptr);

// One device as the runtime reports it.
struct CudaDeviceInfo {
  int index = -1;    // the runtime's device number, [0, CudaDeviceCount())
  std::string name;  // e.g. "NVIDIA H100 80GB HBM3"
  int cc_major = 0;  // compute capability major.minor (9.0: Hopper, 8.0: A100)
  int cc_minor = 0;
  int sm_count = 0;         // streaming multiprocessors
  int64_t total_bytes = 0;  // global memory
  int64_t free_bytes = 0;   // free global memory at the time of the call
  int driver_version = 0;   // the CUDA version the driver supports, 1000 * major + 10 * minor
  int runtime_version = 0;  // the CUDA runtime linked in, same encoding
};

// Properties of device `device`. InvalidArgument for a number outside [0, CudaDeviceCount()),
// Unavailable when CUDA cannot start. Creates the device's primary context (to read its free
// memory), and leaves the calling thread's current device as it was.
StatusOr<CudaDeviceInfo> GetCudaDeviceInfo(int device);

// One line for logs and reports: "cuda:0 NVIDIA H100 80GB HBM3, compute 9.0, 132 SMs, 79.2 GiB
// (78.7 GiB free), driver 13.0, runtime 13.0".
std::string DescribeCudaDevice(const CudaDeviceInfo& info);

// The oldest compute capability the backend supports: 8.0 (bf16 arithmetic; the build compiles for
// sm_80 and sm_90 by default, CMAKE_CUDA_ARCHITECTURES).
constexpr int kMinComputeMajor = 8;
constexpr int kMinComputeMinor = 0;

// Ok when info's compute capability is at least kMinComputeMajor.kMinComputeMinor; otherwise
// Unimplemented, naming the device and its capability. Pure: needs no device.
Status CheckComputeCapability(const CudaDeviceInfo& info);

// Device `device` exists and passes CheckComputeCapability: its properties, else why not
// (Unavailable: no device or no driver; Unimplemented: too old). What `--device auto` will ask.
StatusOr<CudaDeviceInfo> ProbeUsableCudaDevice(int device = 0);

}  // namespace cuda
}  // namespace kernels
}  // namespace mineru
