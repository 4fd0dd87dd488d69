// tests/kernels/cuda_test_util.h — what the CUDA kernel tests share: Status assertions, device
// copies of host values as fp32 or bf16 (one element past the allocation's start, so that no kernel
// may assume more than the element's own alignment), and the fixture that skips, naming why, where no
// usable CUDA device is present. Random data and tolerant comparison are the CPU tests'
// (kernel_test_util.h).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../util/cuda_skip.h"
#include "base/bf16.h"
#include "base/status.h"
#include "kernel_test_util.h"
#include "kernels/cuda/buffer.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/device.h"

namespace mineru {
namespace kernels {
namespace cuda_test {

namespace cu = ::mineru::kernels::cuda;
using cu::Bf16;
using ::mineru::kernels::testing::ActivationInputs;
using ::mineru::kernels::testing::ExpectNear;
using ::mineru::kernels::testing::RandomVec;
using ::mineru::kernels::testing::Tol;

#define CUDA_TEST_ASSERT_OK(expr)                                     \
  do {                                                                \
    const ::mineru::Status _status = (expr);                          \
    ASSERT_TRUE(_status.ok()) << #expr << ": " << _status.ToString(); \
  } while (0)

#define CUDA_TEST_ASSIGN_IMPL(tmp, lhs, expr)                        \
  auto tmp = (expr);                                                 \
  ASSERT_TRUE(tmp.ok()) << #expr << ": " << tmp.status().ToString(); \
  lhs = std::move(tmp).value()
#define CUDA_TEST_ASSIGN(lhs, expr) CUDA_TEST_ASSIGN_IMPL(MINERU_CONCAT(_cuda_test_, __LINE__), lhs, expr)

// Host values as element type T and back.
template <typename T>
T FromF32(float v);
template <>
inline float FromF32<float>(float v) {
  return v;
}
template <>
inline Bf16 FromF32<Bf16>(float v) {
  return Bf16{F32ToBf16(v)};
}
inline float ToF32(float v) { return v; }
inline float ToF32(Bf16 v) { return Bf16ToF32(v.bits); }

// v rounded to what T holds, so the twin sees exactly the kernel's inputs.
template <typename T>
std::vector<float> Representable(std::vector<float> v) {
  for (float& x : v) x = ToF32(FromF32<T>(x));
  return v;
}

// A device copy of host values as T, starting `offset` elements into its allocation (by default
// one: no kernel may assume more than the element's own alignment; 0 gives the allocation's own
// 256-byte alignment).
template <typename T>
struct DeviceArray {
  cu::DeviceBuffer buf;
  size_t count = 0;
  size_t offset = 1;
  T* data() const { return buf.as<T>() + offset; }
};

template <typename T>
StatusOr<DeviceArray<T>> ToDevice(const std::vector<float>& values, size_t offset = 1) {
  std::vector<T> host(values.size());
  for (size_t i = 0; i < values.size(); ++i) host[i] = FromF32<T>(values[i]);
  DeviceArray<T> a;
  a.count = host.size();
  a.offset = offset;
  MINERU_ASSIGN_OR_RETURN(a.buf, cu::DeviceBuffer::Allocate((host.size() + offset) * sizeof(T)));
  MINERU_RETURN_IF_ERROR(a.buf.CopyFromHost(host.data(), host.size() * sizeof(T), offset * sizeof(T)));
  return a;
}

template <typename T>
StatusOr<std::vector<float>> ToHost(const DeviceArray<T>& a) {
  std::vector<T> host(a.count);
  MINERU_RETURN_IF_ERROR(a.buf.CopyToHost(host.data(), a.count * sizeof(T), a.offset * sizeof(T)));
  std::vector<float> out(a.count);
  for (size_t i = 0; i < a.count; ++i) out[i] = ToF32(host[i]);
  return out;
}

// Integers (offsets, block tables) on the device as they are.
inline StatusOr<cu::DeviceBuffer> IntsToDevice(const std::vector<int32_t>& values) {
  MINERU_ASSIGN_OR_RETURN(cu::DeviceBuffer buf, cu::DeviceBuffer::Allocate(values.size() * sizeof(int32_t)));
  MINERU_RETURN_IF_ERROR(buf.CopyFromHost(values.data(), values.size() * sizeof(int32_t)));
  return buf;
}

template <typename T>
const char* TypeName() {
  return sizeof(T) == 4 ? "f32" : "bf16";
}

// The base of the tests that need a device: skipped, with the reason, where there is none usable.
class CudaDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = ::mineru::testing::CudaSkipReason(); !why.empty()) GTEST_SKIP() << why;
    CUDA_TEST_ASSIGN(stream_, cu::CudaStream::Create());
  }
  cu::StreamHandle stream() const { return stream_.handle(); }

  cu::CudaStream stream_;
};

}  // namespace cuda_test
}  // namespace kernels
}  // namespace mineru
