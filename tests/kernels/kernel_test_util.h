// tests/kernels/kernel_test_util.h — helpers shared by the kernel tests: deterministic
// random data, dense weight storage in any dtype (optionally misaligned), and the fixture
// that runs a test once per compiled SIMD target supported by this CPU.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/bf16.h"
#include "hwy/targets.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/kernels.h"
#include "kernels/quant.h"

namespace mineru {
namespace kernels {
namespace testing {

inline std::vector<float> RandomVec(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// A dense weight matrix stored as `dtype`, starting `misalign` elements into its buffer.
class DenseWeights {
 public:
  DenseWeights(const std::vector<float>& values, int64_t rows, int64_t cols, DType dtype, size_t misalign = 0)
      : rows_(rows), cols_(cols), dtype_(dtype) {
    const size_t esize = dtype == DType::kF32 ? 4 : 2;
    bytes_.assign((values.size() + misalign + 1) * esize, 0);
    offset_ = misalign * esize;
    for (size_t i = 0; i < values.size(); ++i) {
      uint8_t* p = bytes_.data() + offset_ + i * esize;
      if (dtype == DType::kF32) {
        std::memcpy(p, &values[i], 4);
      } else {
        const uint16_t h = dtype == DType::kBF16 ? F32ToBf16(values[i]) : F32ToF16(values[i]);
        std::memcpy(p, &h, 2);
      }
    }
  }
  WeightView view() const { return WeightView{dtype_, bytes_.data() + offset_, rows_, cols_}; }

 private:
  int64_t rows_, cols_;
  DType dtype_;
  size_t offset_ = 0;
  std::vector<uint8_t> bytes_;
};

inline std::string TargetParamName(const ::testing::TestParamInfo<int64_t>& info) {
  return hwy::TargetName(info.param);
}

// Runs each TEST_P once per compiled + supported target, with the dispatch forced to it.
class PerTarget : public ::testing::TestWithParam<int64_t> {
 protected:
  void SetUp() override {
    hwy::SetSupportedTargetsForTest(GetParam());
    SetKernelPath(KernelPath::kHighway);
    ASSERT_STREQ(cpu::DispatchedTargetName(), hwy::TargetName(GetParam()));
  }
  void TearDown() override { hwy::SetSupportedTargetsForTest(0); }
};

#define MINERU_INSTANTIATE_PER_TARGET(suite)                                                        \
  INSTANTIATE_TEST_SUITE_P(Targets, suite,                                                          \
                           ::testing::ValuesIn(::mineru::kernels::cpu::SupportedCompiledTargets()), \
                           ::mineru::kernels::testing::TargetParamName)

}  // namespace testing
}  // namespace kernels
}  // namespace mineru
