// The cuBLASLt matrix products (kernels/cuda/gemm.h) against a plain scalar twin written here:
// y[i][j] = sum_k x[i][k] w[j][k] (+ bias[j]), summed in double on the very inputs the GPU saw
// (bf16 inputs widened exactly), i.e. ref::MatMul's contract without its fp32 summation order.
//
// Shapes: m = 1 (decode), odd k and n, the ViT's 1279 / 1280 / 5120 and the decoder's 896 / 4864,
// the LM head's 151,655 features, k = 0; with and without a bias, the bias fused into cuBLASLt's
// epilogue and added by AddBiasRows; pointers one element past an allocation's start (2- or
// 4-byte aligned) and 256-byte aligned.
//
// Tolerance, |got - want| <= rel * |want| + 2e-5 * sum_k |x w| (+ |bias|): the fp32 sums of cuBLAS
// (its own order, split-k included) carry ~sqrt(k) ulp of the magnitude summed, well under 2e-5 of
// it at k = 5120; rel 4e-3 where y is bf16 (rounded once, half an ulp <= 2^-8), 0 for fp32 outputs.
// Where a bf16 product gets its bias afterwards (AddBiasRows) the product was rounded on its own
// first: the magnitude's factor is then 4e-3.
// The tests that need a device skip, saying why, where there is none (CPU machines, CI).

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "cuda_test_util.h"
#include "kernels/cuda/buffer.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/gemm.h"

namespace mineru {
namespace kernels {
namespace cuda_test {
namespace {

class CudaGemmTest : public CudaDeviceTest {
 protected:
  void SetUp() override {
    CudaDeviceTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    CUDA_TEST_ASSIGN(gemm_, cu::GemmHandle::Create());
  }
  cu::GemmHandle gemm_;
};

// The twin and each output's summed magnitude.
void Twin(const std::vector<float>& x, int64_t m, int64_t k, const std::vector<float>& w, int64_t n,
          const std::vector<float>* bias, std::vector<float>* y, std::vector<float>* mag) {
  y->assign(static_cast<size_t>(m * n), 0.0f);
  mag->assign(y->size(), 0.0f);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = bias ? (*bias)[j] : 0.0, abs_sum = bias ? std::fabs((*bias)[j]) : 0.0;
      const float* xr = x.data() + i * k;
      const float* wr = w.data() + j * k;
      for (int64_t d = 0; d < k; ++d) {
        sum += static_cast<double>(xr[d]) * wr[d];
        abs_sum += std::fabs(static_cast<double>(xr[d]) * wr[d]);
      }
      (*y)[i * n + j] = static_cast<float>(sum);
      (*mag)[i * n + j] = static_cast<float>(abs_sum);
    }
  }
}

void ExpectGemmNear(const std::vector<float>& got, const std::vector<float>& want,
                    const std::vector<float>& mag, float rel, float mag_rel, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(std::fabs(got[i] - want[i]) <= rel * std::fabs(want[i]) + mag_rel * mag[i] + 1e-30f)) {
      if (++bad <= 5) ADD_FAILURE() << what << " at " << i << ": got " << got[i] << " want " << want[i];
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.size() << " outside the bound";
}

// y = x W^T (+ bias) with inputs In and output Out, at offset 1 and 256-byte aligned, bias fused
// and not.
template <typename In, typename Out>
void CheckGemm(cu::GemmHandle& h, cu::StreamHandle stream, int64_t m, int64_t k, int64_t n, bool with_bias) {
  const std::string what = std::string("MatMul ") + TypeName<In>() + "->" + TypeName<Out>() +
                           " m=" + std::to_string(m) + " k=" + std::to_string(k) + " n=" + std::to_string(n) +
                           (with_bias ? " bias" : "");
  const uint32_t seed = static_cast<uint32_t>(m * 131 + k * 17 + n);
  const std::vector<float> x = Representable<In>(RandomVec(static_cast<size_t>(m * k), seed, -1.0f, 1.0f));
  const std::vector<float> w =
      Representable<In>(RandomVec(static_cast<size_t>(n * k), seed + 1, -0.5f, 0.5f));
  const std::vector<float> bias = RandomVec(static_cast<size_t>(n), seed + 2, -2.0f, 2.0f);
  std::vector<float> want, mag;
  Twin(x, m, k, w, n, with_bias ? &bias : nullptr, &want, &mag);
  const float out_rel = sizeof(Out) == 4 ? 0.0f : 4e-3f;
  for (size_t offset : {size_t{1}, size_t{0}}) {
    for (bool fuse : {true, false}) {
      if (!with_bias && !fuse) continue;
      const std::string where = what + (offset ? " offset 1" : " aligned") + (fuse ? "" : " unfused");
      CUDA_TEST_ASSIGN(DeviceArray<In> dx, ToDevice<In>(x, offset));
      CUDA_TEST_ASSIGN(DeviceArray<In> dw, ToDevice<In>(w, offset));
      CUDA_TEST_ASSIGN(DeviceArray<float> db, ToDevice<float>(bias, offset));
      CUDA_TEST_ASSIGN(DeviceArray<Out> dy, ToDevice<Out>(std::vector<float>(want.size(), 9.0f), offset));
      h.set_fuse_bias(fuse);
      CUDA_TEST_ASSERT_OK(
          cu::MatMul(h, dx.data(), m, k, dw.data(), n, with_bias ? db.data() : nullptr, dy.data(), stream));
      CUDA_TEST_ASSIGN(std::vector<float> got, ToHost(dy));
      // Bias added after a bf16 product: the product was rounded before the bias, by up to half an
      // ulp of its own size (bounded by the magnitude), whatever the sum's size after the bias.
      const bool twice = with_bias && !h.last_bias_fused() && sizeof(Out) == 2;
      ExpectGemmNear(got, want, mag, out_rel, twice ? 4e-3f : 2e-5f, where);
    }
  }
  h.set_fuse_bias(true);
}

struct Shape {
  int64_t m, k, n;
};
const Shape kShapes[] = {{1, 1, 1},         {1, 1280, 1280},  {7, 3, 5},      {33, 1279, 1280},
                         {5, 3584, 1280},   {17, 1280, 3584}, {9, 896, 4864}, {2, 4864, 896},
                         {300, 1280, 1279}, {3, 5120, 1280}};

TEST_F(CudaGemmTest, Bf16ToBf16) {
  for (const Shape& s : kShapes) {
    for (bool bias : {false, true}) {
      ASSERT_NO_FATAL_FAILURE((CheckGemm<Bf16, Bf16>(gemm_, stream(), s.m, s.k, s.n, bias)));
    }
  }
}

TEST_F(CudaGemmTest, Bf16ToF32) {
  for (const Shape& s : kShapes) {
    for (bool bias : {false, true}) {
      ASSERT_NO_FATAL_FAILURE((CheckGemm<Bf16, float>(gemm_, stream(), s.m, s.k, s.n, bias)));
    }
  }
  // The LM head: 896 features to 151,655 logits, one and two rows.
  ASSERT_NO_FATAL_FAILURE((CheckGemm<Bf16, float>(gemm_, stream(), 1, 896, 151655, false)));
  ASSERT_NO_FATAL_FAILURE((CheckGemm<Bf16, float>(gemm_, stream(), 2, 896, 151655, false)));
}

TEST_F(CudaGemmTest, F32ToF32) {
  for (const Shape& s : kShapes) {
    for (bool bias : {false, true}) {
      ASSERT_NO_FATAL_FAILURE((CheckGemm<float, float>(gemm_, stream(), s.m, s.k, s.n, bias)));
    }
  }
}

// k = 0: an empty sum, y = bias (or zeros).
TEST_F(CudaGemmTest, EmptySum) {
  ASSERT_NO_FATAL_FAILURE((CheckGemm<Bf16, Bf16>(gemm_, stream(), 3, 0, 5, true)));
  ASSERT_NO_FATAL_FAILURE((CheckGemm<float, float>(gemm_, stream(), 3, 0, 5, false)));
}

// AddBiasRows, the unfused bias, on its own against its loop.
TEST_F(CudaGemmTest, AddBiasRows) {
  const int64_t m = 7, n = 1281;
  const std::vector<float> y = Representable<Bf16>(RandomVec(static_cast<size_t>(m * n), 1, -3.0f, 3.0f));
  const std::vector<float> bias = RandomVec(static_cast<size_t>(n), 2, -1.0f, 1.0f);
  std::vector<float> want = y;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) want[i * n + j] += bias[j];
  }
  CUDA_TEST_ASSIGN(DeviceArray<float> dy, ToDevice<float>(y));
  CUDA_TEST_ASSIGN(DeviceArray<float> db, ToDevice<float>(bias));
  CUDA_TEST_ASSERT_OK(cu::AddBiasRows(dy.data(), m, n, db.data(), stream()));
  CUDA_TEST_ASSIGN(std::vector<float> got, ToHost(dy));
  ExpectNear(got, want, Tol{0.0f, 0.0f}, "AddBiasRows f32");
  std::vector<float> want16 = want;
  for (float& v : want16) v = ToF32(FromF32<Bf16>(v));
  CUDA_TEST_ASSIGN(DeviceArray<Bf16> dy16, ToDevice<Bf16>(y));
  CUDA_TEST_ASSERT_OK(cu::AddBiasRows(dy16.data(), m, n, db.data(), stream()));
  CUDA_TEST_ASSIGN(got, ToHost(dy16));
  ExpectNear(got, want16, Tol{0.0f, 0.0f}, "AddBiasRows bf16");
}

// Argument checks happen before anything touches the device: these run everywhere.
TEST(CudaGemmArgsTest, RejectsBadShapesAndAcceptsEmptyWork) {
  cu::GemmHandle none;  // never created: no cuBLASLt handle
  EXPECT_FALSE(none.valid());
  float* fake = reinterpret_cast<float*>(uintptr_t{256});
  const Bf16* bfake = reinterpret_cast<const Bf16*>(uintptr_t{512});
  EXPECT_EQ(cu::MatMul(none, fake, -1, 4, fake, 4, nullptr, fake).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cu::MatMul(none, bfake, 2, 4, bfake, 4, nullptr, fake).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(cu::MatMul(none, bfake, 0, 4, bfake, 4, nullptr, static_cast<Bf16*>(nullptr)).ok());
  EXPECT_TRUE(cu::MatMul(none, fake, 3, 4, fake, 0, nullptr, fake).ok());
  EXPECT_EQ(cu::AddBiasRows(fake, 2, 3, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(cu::AddBiasRows(static_cast<Bf16*>(nullptr), 0, 3, nullptr).ok());
  if (cu::CudaDeviceCount() == 0) {
    EXPECT_FALSE(cu::GemmHandle::Create().ok());
  }
}

}  // namespace
}  // namespace cuda_test
}  // namespace kernels
}  // namespace mineru
