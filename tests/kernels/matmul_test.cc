// MatMul (dense f32/bf16/f16): the SIMD algorithms (dot, packed, auto) against the scalar
// twin on every target, odd sizes, misaligned x and W, with and without bias and pool.

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/reference.h"

namespace mineru {
namespace kernels {
namespace {

using testing::DenseWeights;
using testing::RandomVec;

class MatMulTest : public testing::PerTarget {};

// Bound for |simd - ref| of y[i][j]: relative to sum |x||w| (+|b|).
std::vector<float> AbsDot(const float* x, int64_t m, const WeightView& w, const float* bias) {
  std::vector<float> row(static_cast<size_t>(w.cols)), out(static_cast<size_t>(m * w.rows));
  for (int64_t j = 0; j < w.rows; ++j) {
    ref::WeightRowToF32(w, j, row.data());
    for (int64_t i = 0; i < m; ++i) {
      double s = bias ? std::fabs(bias[j]) : 0.0;
      for (int64_t c = 0; c < w.cols; ++c) s += std::fabs(x[i * w.cols + c] * row[c]);
      out[i * w.rows + j] = static_cast<float>(s);
    }
  }
  return out;
}

// Each |got - want| within rel * scale (its own bound, AbsDot) + 1e-6; names up to five offenders.
void ExpectCloseScaled(const std::vector<float>& got, const std::vector<float>& want,
                       const std::vector<float>& scale, float rel, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const float tol = rel * scale[i] + 1e-6f;
    if (!(std::fabs(got[i] - want[i]) <= tol)) {
      if (++bad <= 5) ADD_FAILURE() << what << " at " << i << ": got " << got[i] << " want " << want[i];
    }
  }
  EXPECT_EQ(bad, 0) << what;
}

struct Case {
  int64_t m, n, k;
};

void RunMatMulCase(const Case& c, DType dtype, bool with_bias, const KernelContext& ctx, cpu::MatMulPath path,
                   uint32_t seed) {
  // Misaligned x (+1 float) and W (+1 element).
  std::vector<float> xbuf = RandomVec(static_cast<size_t>(c.m * c.k + 1), seed);
  const float* x = xbuf.data() + 1;
  const std::vector<float> wv = RandomVec(static_cast<size_t>(c.n * c.k), seed + 1);
  const DenseWeights w(wv, c.n, c.k, dtype, 1);
  const std::vector<float> bias = RandomVec(static_cast<size_t>(c.n), seed + 2);
  const float* b = with_bias ? bias.data() : nullptr;
  std::vector<float> want(static_cast<size_t>(c.m * c.n)), got(want.size(), NAN);
  ref::MatMul(x, c.m, w.view(), b, want.data(), ctx.Serial(0));
  cpu::MatMul(x, c.m, w.view(), b, got.data(), ctx, path);
  const std::string what = "m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) +
                           " k=" + std::to_string(c.k) + " dtype=" + DTypeName(dtype) +
                           " path=" + std::to_string(static_cast<int>(path));
  ExpectCloseScaled(got, want, AbsDot(x, c.m, w.view(), b), 5e-6f, what.c_str());
}

TEST_P(MatMulTest, OddSizesAllPathsMatchReference) {
  const int64_t ms[] = {1, 2, 3, 4, 5, 7, 9, 13};
  const int64_t ns[] = {1, 5, 33};
  const int64_t ks[] = {1, 7, 8, 13, 64, 100};
  uint32_t seed = 1;
  const KernelWorkspace ctx = Ctx();
  for (DType dt : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (int64_t m : ms) {
      for (int64_t n : ns) {
        for (int64_t k : ks) {
          for (cpu::MatMulPath path : {cpu::MatMulPath::kDot, cpu::MatMulPath::kPacked}) {
            RunMatMulCase({m, n, k}, dt, (seed & 1) != 0, ctx, path, seed);
            ++seed;
          }
        }
      }
    }
  }
}

TEST_P(MatMulTest, PanelAndDepthBlockingWithPool) {
  ThreadPool pool(3);
  // k > 256 crosses the packed depth blocks; n spans several panels and tasks.
  const Case cases[] = {{1, 300, 257},  {6, 200, 513},  {47, 97, 300},   {50, 130, 600},
                        {64, 896, 300}, {13, 40, 1176}, {3, 2000, 1000}, {20, 300, 1000}};
  uint32_t seed = 100;
  const KernelWorkspace ctx = Ctx(&pool);
  for (const Case& c : cases) {
    for (DType dt : {DType::kF32, DType::kBF16}) {
      for (cpu::MatMulPath path : {cpu::MatMulPath::kAuto, cpu::MatMulPath::kDot, cpu::MatMulPath::kPacked}) {
        RunMatMulCase(c, dt, true, ctx, path, seed++);
      }
    }
  }
}

TEST_P(MatMulTest, PublicEntryPointMatchesReference) {
  ThreadPool pool(2);
  const Case c{20, 70, 90};
  std::vector<float> x = RandomVec(static_cast<size_t>(c.m * c.k), 7);
  const DenseWeights w(RandomVec(static_cast<size_t>(c.n * c.k), 8), c.n, c.k, DType::kBF16);
  std::vector<float> want(static_cast<size_t>(c.m * c.n)), got(want.size());
  ref::MatMul(x.data(), c.m, w.view(), nullptr, want.data(), Ctx());
  MatMul(x.data(), c.m, w.view(), nullptr, got.data(), Ctx(&pool));
  ExpectCloseScaled(got, want, AbsDot(x.data(), c.m, w.view(), nullptr), 5e-6f, "public");
}

MINERU_INSTANTIATE_PER_TARGET(MatMulTest);

TEST(BackendTest, ReferenceBackendIsSelectable) {
  KernelConfig reference;
  reference.reference = true;
  EXPECT_STREQ(TargetName(reference), "reference");
  const Case c{3, 5, 7};
  std::vector<float> x = RandomVec(21, 1);
  const DenseWeights w(RandomVec(35, 2), c.n, c.k, DType::kF32);
  std::vector<float> want(15), got(15);
  const KernelWorkspace ctx(reference, nullptr);
  ref::MatMul(x.data(), c.m, w.view(), nullptr, want.data(), ctx);
  MatMul(x.data(), c.m, w.view(), nullptr, got.data(), ctx);
  EXPECT_EQ(want, got);                                   // the very same code
  EXPECT_STRNE(TargetName(KernelConfig()), "reference");  // the default runs the SIMD kernels
}

}  // namespace
}  // namespace kernels
}  // namespace mineru
