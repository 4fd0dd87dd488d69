// kernels/cuda/device.cc — the device probe and the runtime-error translation (host code only).

#include "kernels/cuda/device.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <string>

#include "kernels/cuda/cuda_internal.h"

namespace mineru {
namespace kernels {
namespace cuda {

namespace {

// The errors that mean "this machine cannot run CUDA now", as opposed to a bug or a bad argument.
bool IsUnavailable(cudaError_t err) {
  switch (err) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInitializationError:
    case cudaErrorDevicesUnavailable:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorStubLibrary:
    case cudaErrorSystemNotReady:
    case cudaErrorDeviceUninitialized:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorDeviceNotLicensed:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorHardwareStackError:
      return true;
    default:
      return false;
  }
}

std::string VersionText(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

std::string GiB(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return text;
}

}  // namespace

Status CudaStatus(cudaError_t err, const std::string& what) {
  if (err == cudaSuccess) return Status::Ok();
  const std::string text = what + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")";
  if (err == cudaErrorMemoryAllocation) return OutOfMemoryError("on the CUDA device: " + text);
  if (IsUnavailable(err)) return UnavailableError(text);
  if (err == cudaErrorInvalidValue || err == cudaErrorInvalidDevice || err == cudaErrorInvalidConfiguration ||
      err == cudaErrorInvalidDevicePointer) {
    return InvalidArgumentError(text);
  }
  return InternalError(text);
}

Status LaunchStatus(const char* op) { return CudaStatus(cudaGetLastError(), std::string("launching ") + op); }

Status CheckSizes(const char* op, std::initializer_list<int64_t> sizes) {
  for (int64_t s : sizes) {
    if (s < 0) return InvalidArgumentError(std::string(op) + ": negative size " + std::to_string(s));
  }
  return Status::Ok();
}

Status CheckPointers(const char* op, std::initializer_list<const void*> pointers) {
  for (const void* p : pointers) {
    if (p == nullptr) return InvalidArgumentError(std::string(op) + ": null device pointer");
  }
  return Status::Ok();
}

Status CheckAttentionHeads(const char* op, int64_t num_heads, int64_t num_kv_heads, int64_t head_dim,
                           int64_t max_head_dim) {
  if (num_heads < 1 || num_kv_heads < 1 || num_heads % num_kv_heads != 0 || head_dim < 1 ||
      head_dim > max_head_dim) {
    return InvalidArgumentError(
        std::string(op) + ": " + std::to_string(num_heads) + " query heads over " +
        std::to_string(num_kv_heads) + " KV heads of dim " + std::to_string(head_dim) +
        " (need KV heads dividing the query heads, dim in [1, " + std::to_string(max_head_dim) + "])");
  }
  return Status::Ok();
}

int CudaDeviceCount(std::string* reason) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    // The error is not sticky: clear it so that it does not surface at the next launch check.
    (void)cudaGetLastError();
    count = 0;
    if (reason) *reason = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
    return 0;
  }
  if (reason) {
    if (count == 0) {
      *reason = "the CUDA runtime reports 0 devices";
    } else {
      reason->clear();
    }
  }
  return count;
}

StatusOr<CudaDeviceInfo> GetCudaDeviceInfo(int device) {
  std::string reason;
  const int count = CudaDeviceCount(&reason);
  if (count == 0) return UnavailableError("no CUDA device: " + reason);
  if (device < 0 || device >= count) {
    return InvalidArgumentError("CUDA device " + std::to_string(device) + " does not exist (" +
                                std::to_string(count) + " visible)");
  }
  cudaDeviceProp prop{};
  MINERU_RETURN_IF_ERROR(CudaStatus(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties"));
  CudaDeviceInfo info;
  info.index = device;
  info.name = prop.name;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.sm_count = prop.multiProcessorCount;
  info.total_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  MINERU_RETURN_IF_ERROR(CudaStatus(cudaDriverGetVersion(&info.driver_version), "cudaDriverGetVersion"));
  MINERU_RETURN_IF_ERROR(CudaStatus(cudaRuntimeGetVersion(&info.runtime_version), "cudaRuntimeGetVersion"));
  // Free memory is per device: switch to it for the query and back.
  int current = 0;
  MINERU_RETURN_IF_ERROR(CudaStatus(cudaGetDevice(&current), "cudaGetDevice"));
  MINERU_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(device), "cudaSetDevice"));
  size_t free_bytes = 0, total_bytes = 0;
  const cudaError_t mem = cudaMemGetInfo(&free_bytes, &total_bytes);
  const cudaError_t back = cudaSetDevice(current);
  MINERU_RETURN_IF_ERROR(CudaStatus(mem, "cudaMemGetInfo"));
  MINERU_RETURN_IF_ERROR(CudaStatus(back, "cudaSetDevice"));
  info.free_bytes = static_cast<int64_t>(free_bytes);
  return info;
}

std::string DescribeCudaDevice(const CudaDeviceInfo& info) {
  return "cuda:" + std::to_string(info.index) + " " + info.name + ", compute " +
         std::to_string(info.cc_major) + "." + std::to_string(info.cc_minor) + ", " +
         std::to_string(info.sm_count) + " SMs, " + GiB(info.total_bytes) + " (" + GiB(info.free_bytes) +
         " free), driver " + VersionText(info.driver_version) + ", runtime " +
         VersionText(info.runtime_version);
}

Status CheckComputeCapability(const CudaDeviceInfo& info) {
  const bool ok = info.cc_major > kMinComputeMajor ||
                  (info.cc_major == kMinComputeMajor && info.cc_minor >= kMinComputeMinor);
  if (ok) return Status::Ok();
  return UnimplementedError(
      "CUDA device " + std::to_string(info.index) + " (" + info.name + ") has compute capability " +
      std::to_string(info.cc_major) + "." + std::to_string(info.cc_minor) + "; the CUDA backend needs " +
      std::to_string(kMinComputeMajor) + "." + std::to_string(kMinComputeMinor) + " or newer");
}

StatusOr<CudaDeviceInfo> ProbeUsableCudaDevice(int device) {
  MINERU_ASSIGN_OR_RETURN(CudaDeviceInfo info, GetCudaDeviceInfo(device));
  MINERU_RETURN_IF_ERROR(CheckComputeCapability(info));
  return info;
}

}  // namespace cuda
}  // namespace kernels
}  // namespace mineru
