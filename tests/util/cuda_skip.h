// tests/util/cuda_skip.h — why a test that needs a CUDA device must skip here, shared by every
// CUDA test fixture (kernels, model, engine): the reason names what the probe found.
#pragma once

#include <string>

#include "kernels/cuda/device.h"

namespace mineru::testing {

// "" when device 0 exists and is usable (kernels::cuda::ProbeUsableCudaDevice); else the reason
// ("no CUDA device: <the runtime's error>", "no usable CUDA device: <why>").
inline std::string CudaSkipReason() {
  std::string reason;
  if (kernels::cuda::CudaDeviceCount(&reason) == 0) return "no CUDA device: " + reason;
  auto info = kernels::cuda::ProbeUsableCudaDevice(0);
  if (!info.ok()) return "no usable CUDA device: " + info.status().ToString();
  return "";
}

}  // namespace mineru::testing
