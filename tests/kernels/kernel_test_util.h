// tests/kernels/kernel_test_util.h — helpers shared by the kernel tests (CPU and CUDA): deterministic
// random data, activation inputs with extremes, tolerant comparison with the scalar twins, dense
// weight storage in any dtype (optionally misaligned), and the fixture that runs a test once per
// compiled SIMD target supported by this CPU.
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

// Activation inputs in [-12, 12), the first ones replaced by extremes (exp overflowing and
// underflowing, signed zeros, tiny values).
inline std::vector<float> ActivationInputs(size_t n, uint32_t seed) {
  std::vector<float> x = RandomVec(n, seed, -12.0f, 12.0f);
  const float extremes[] = {0.0f,  -0.0f,  1e-30f, -1e-30f, 100.0f, -100.0f,
                            88.0f, -60.0f, 5e4f,   -5e4f,   0.5f,   -3.0f};
  for (size_t i = 0; i < n && i < sizeof(extremes) / sizeof(extremes[0]); ++i) x[i] = extremes[i];
  return x;
}

// A tolerance: |got - want| <= rel * |want| + abs.
struct Tol {
  float rel, abs;
};

// Every element within tol; names up to five offenders and how many there were.
inline void ExpectNear(const std::vector<float>& got, const std::vector<float>& want, Tol tol,
                       const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(std::fabs(got[i] - want[i]) <= tol.rel * std::fabs(want[i]) + tol.abs)) {
      if (++bad <= 5) ADD_FAILURE() << what << " at " << i << ": got " << got[i] << " want " << want[i];
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.size() << " outside rel " << tol.rel << " abs "
                    << tol.abs;
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

// Runs each TEST_P once per compiled + supported target: config() runs the SIMD kernels on it.
class PerTarget : public ::testing::TestWithParam<int64_t> {
 protected:
  void SetUp() override {
    config_.target = GetParam();
    ASSERT_STREQ(cpu::DispatchedTargetName(config_), hwy::TargetName(GetParam()));
  }
  const KernelConfig& config() const { return config_; }
  // A context of config() on pool (may be null), with scratch of its own.
  KernelWorkspace Ctx(ThreadPool* pool = nullptr) const { return KernelWorkspace(config_, pool); }

 private:
  KernelConfig config_;
};

#define MINERU_INSTANTIATE_PER_TARGET(suite)                                                        \
  INSTANTIATE_TEST_SUITE_P(Targets, suite,                                                          \
                           ::testing::ValuesIn(::mineru::kernels::cpu::SupportedCompiledTargets()), \
                           ::mineru::kernels::testing::TargetParamName)

}  // namespace testing
}  // namespace kernels
}  // namespace mineru
