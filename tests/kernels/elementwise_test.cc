// Norms, activations, RoPE and weight-row widening: SIMD vs the scalar twins on every
// target, odd lengths, misaligned pointers, in place, with and without a pool.

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/quant.h"
#include "kernels/reference.h"

namespace mineru {
namespace kernels {
namespace {

using testing::ActivationInputs;
using testing::DenseWeights;
using testing::ExpectNear;
using testing::RandomVec;

class ElementwiseTest : public testing::PerTarget {};

TEST_P(ElementwiseTest, RmsNormAndLayerNorm) {
  ThreadPool pool(2);
  for (int64_t n : {1, 7, 8, 17, 64, 896, 1283}) {
    for (int64_t m : {1, 3, 40}) {
      std::vector<float> xb =
          RandomVec(static_cast<size_t>(m * n + 1), static_cast<uint32_t>(n * 10 + m), -4.0f, 6.0f);
      const std::vector<float> w = RandomVec(static_cast<size_t>(n), 3),
                               b = RandomVec(static_cast<size_t>(n), 4);
      const float* x = xb.data() + 1;
      const std::string what = "n=" + std::to_string(n) + " m=" + std::to_string(m);
      std::vector<float> want(static_cast<size_t>(m * n)), got(want.size());
      ref::RmsNorm(x, m, n, w.data(), 1e-6f, want.data());
      cpu::RmsNorm(x, m, n, w.data(), 1e-6f, got.data(), Ctx(m > 3 ? &pool : nullptr));
      ExpectNear(got, want, {2e-6f, 1e-6f}, "rms " + what);
      ref::LayerNorm(x, m, n, w.data(), b.data(), 1e-6f, want.data());
      cpu::LayerNorm(x, m, n, w.data(), b.data(), 1e-6f, got.data(), Ctx(m > 3 ? &pool : nullptr));
      ExpectNear(got, want, {1e-5f, 2e-6f}, "ln " + what);
      // In place.
      std::vector<float> inplace(x, x + m * n);
      cpu::LayerNorm(inplace.data(), m, n, w.data(), b.data(), 1e-6f, inplace.data(), Ctx());
      ExpectNear(inplace, want, {1e-5f, 2e-6f}, "ln in place " + what);
    }
  }
}

TEST_P(ElementwiseTest, ActivationsMatchReference) {
  ThreadPool pool(3);
  for (size_t n : {size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{100}, size_t{100003}}) {
    const KernelWorkspace p = Ctx(n > 1000 ? &pool : nullptr);
    const std::string what = "n=" + std::to_string(n);
    std::vector<float> base = ActivationInputs(n + 1, static_cast<uint32_t>(n));
    std::vector<float> want(base.begin() + 1, base.end()), got = want;  // got is misaligned in base's sense
    ref::QuickGelu(want.data(), static_cast<int64_t>(n));
    std::vector<float> gb = base;
    cpu::QuickGelu(gb.data() + 1, static_cast<int64_t>(n), p);
    ExpectNear(std::vector<float>(gb.begin() + 1, gb.end()), want, {2e-6f, 1e-30f}, "quick_gelu " + what);

    want.assign(base.begin() + 1, base.end());
    ref::GeluErf(want.data(), static_cast<int64_t>(n));
    gb = base;
    cpu::GeluErf(gb.data() + 1, static_cast<int64_t>(n), p);
    // The SIMD form evaluates x * erfc(|x|/sqrt2) / 2 for x < 0, so where the reference's
    // 1 + erf() cancels to 0 (x < -5.5) it returns the tiny true value instead of -0.
    ExpectNear(std::vector<float>(gb.begin() + 1, gb.end()), want, {2e-6f, 1e-7f}, "gelu_erf " + what);

    const std::vector<float> up = RandomVec(n, 9);
    std::vector<float> gate(base.begin() + 1, base.end());
    want.assign(n, 0.0f);
    got.assign(n, 0.0f);
    ref::SiluMul(gate.data(), up.data(), static_cast<int64_t>(n), want.data());
    cpu::SiluMul(gate.data(), up.data(), static_cast<int64_t>(n), got.data(), p);
    ExpectNear(got, want, {2e-6f, 1e-30f}, "silu_mul " + what);
    cpu::SiluMul(gate.data(), up.data(), static_cast<int64_t>(n), gate.data(), p);  // out == gate
    ExpectNear(gate, want, {2e-6f, 1e-30f}, "silu_mul in place " + what);

    // Sums are exact in both: the twins must agree bit for bit.
    std::vector<float> sum(base.begin() + 1, base.end());
    want = sum;
    ref::AddInPlace(want.data(), up.data(), static_cast<int64_t>(n));
    cpu::AddInPlace(sum.data(), up.data(), static_cast<int64_t>(n), p);
    ASSERT_EQ(sum, want) << "add_in_place " << what;
  }
}

TEST_P(ElementwiseTest, RopeRotateHalf) {
  for (int64_t hd : {2, 8, 18, 64, 80, 130}) {
    std::vector<float> xb = RandomVec(static_cast<size_t>(hd + 1), static_cast<uint32_t>(hd));
    const std::vector<float> c = RandomVec(static_cast<size_t>(hd), 1),
                             s = RandomVec(static_cast<size_t>(hd), 2);
    std::vector<float> want(xb.begin() + 1, xb.end());
    ref::RopeRotateHalf(want.data(), hd, c.data(), s.data());
    cpu::RopeRotateHalf(xb.data() + 1, hd, c.data(), s.data(), config());
    ExpectNear(std::vector<float>(xb.begin() + 1, xb.end()), want, {1e-6f, 1e-7f},
               "rope hd=" + std::to_string(hd));
  }
}

TEST_P(ElementwiseTest, RopeRotateHalfRowsMatchesPerHeadCalls) {
  ThreadPool pool(2);
  // Vision-like layout: rows of [3][heads][hd], rotate q (offset 0) of every head.
  for (int64_t hd : {8, 80}) {
    const int64_t n = 300, heads = 4, stride = 3 * heads * hd + 1;
    std::vector<float> x = RandomVec(static_cast<size_t>(n * stride), 3);
    const std::vector<float> c = RandomVec(static_cast<size_t>(n * hd), 4),
                             s = RandomVec(static_cast<size_t>(n * hd), 5);
    std::vector<float> want = x;
    ref::RopeRotateHalfRows(want.data(), n, stride, heads, hd, c.data(), s.data());
    RopeRotateHalfRows(x.data(), n, stride, heads, hd, c.data(), s.data(), Ctx(&pool));
    ExpectNear(x, want, {1e-6f, 1e-7f}, "rope rows hd=" + std::to_string(hd));
  }
}

TEST_P(ElementwiseTest, WeightRowToF32IsExact) {
  for (DType dt : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (int64_t cols : {1, 9, 64, 1176}) {
      const DenseWeights w(RandomVec(static_cast<size_t>(3 * cols), 5, -70000.0f, 70000.0f), 3, cols, dt, 1);
      std::vector<float> a(static_cast<size_t>(cols)), b(a.size());
      for (int64_t r = 0; r < 3; ++r) {
        ref::WeightRowToF32(w.view(), r, a.data());
        cpu::WeightRowToF32(w.view(), r, b.data(), config());
        ASSERT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * 4)) << DTypeName(dt) << " cols=" << cols;
      }
    }
  }
}

// The machine probes compute what their scalar twins do: the FMA recurrence to float rounding
// (targets without FMA round twice), and as many operations per lane; the read sum closely.
TEST_P(ElementwiseTest, ProbesMatchTheirTwins) {
  for (int64_t iters : {0, 1, 7, 1000}) {
    const ProbeResult want = ref::FmaProbe(iters, 0.25f), got = cpu::FmaProbe(iters, 0.25f, config());
    EXPECT_NEAR(got.value, want.value, 1e-5f) << iters;
    const double lanes = iters > 0 ? got.flops / want.flops : 0;
    if (iters > 0) {
      EXPECT_EQ(lanes, std::round(lanes)) << iters;
      EXPECT_GE(lanes, 1.0);
    } else {
      EXPECT_EQ(got.flops, 0.0);
    }
  }
  for (size_t n : {size_t{0}, size_t{1}, size_t{31}, size_t{1000}, size_t{65537}}) {
    const std::vector<float> x = RandomVec(n + 1, static_cast<uint32_t>(n), -1.0f, 1.0f);
    const double want = ref::ReadProbe(x.data() + 1, static_cast<int64_t>(n));
    EXPECT_NEAR(cpu::ReadProbe(x.data() + 1, static_cast<int64_t>(n), config()), want,
                1e-6 * static_cast<double>(n) + 1e-9)
        << n;
  }
}

// fp32 -> fp16 rows: the SIMD conversion (F16C where it rounds to nearest even) gives the twin's
// bits on every target: ties, subnormals, values past the fp16 range (clamped to +-65504), strided
// rows whose width ends inside a vector.
TEST_P(ElementwiseTest, ToF16RowsMatchesItsTwin) {
  const int64_t rows = 37, cols = 83, xs = 91, os = 87;
  std::vector<float> x = RandomVec(static_cast<size_t>(rows * xs), 77, -3.0f, 3.0f);
  const float special[] = {0.0f,   -0.0f,    1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, 6e-8f,
                           -3e-5f, 65504.0f, 65519.0f,           65520.0f,           -1e9f,
                           1e-10f, 2049.0f};
  for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); ++i) x[i * 7] = special[i];
  for (size_t i = 0; i < x.size(); i += 13) x[i] *= 40000.0f;
  x[5] = std::numeric_limits<float>::quiet_NaN();          // in a vector body
  x[cols - 1] = -std::numeric_limits<float>::quiet_NaN();  // in a row's scalar tail
  ThreadPool pool(3);
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
    std::vector<uint16_t> want(static_cast<size_t>(rows * os), 0xabcd), got(want);
    ref::ToF16Rows(x.data(), rows, cols, xs, want.data(), os);
    cpu::ToF16Rows(x.data(), rows, cols, xs, got.data(), os, Ctx(p));
    EXPECT_EQ(got, want);
  }
}

MINERU_INSTANTIATE_PER_TARGET(ElementwiseTest);

// bench --target / MINERU_KERNELS: a tier's configuration caps what every kernel dispatches to;
// none is the best target. Configurations are values: making one changes no other.
TEST(SimdTierTest, CapsTheDispatch) {
  const std::string best = TargetName(KernelConfig());
  EXPECT_FALSE(KernelConfigForTier("avx9").ok());
  EXPECT_EQ(TargetName(KernelConfig()), best);  // a refused tier changes nothing
#if HWY_ARCH_X86
  const struct {
    const char* tier;
    int64_t target;
  } tiers[] = {{"avx512_vnni", HWY_AVX3_DL},
               {"avx512", HWY_AVX3},
               {"avx2_vnni", HWY_AVX2},
               {"avx2", HWY_AVX2},
               {"sse4", HWY_SSE4}};
  int capped = 0;
  for (const auto& t : tiers) {
    const StatusOr<KernelConfig> c = KernelConfigForTier(t.tier);
    if (!c.ok()) continue;  // above this CPU
    ++capped;
    EXPECT_STREQ(TargetName(*c), hwy::TargetName(t.target)) << t.tier;
    EXPECT_EQ(IntegerPanelsAvailable(*c), t.target == HWY_AVX3_DL) << t.tier;
    // AVX-VNNI is used only by the tier that names it (and where the CPU has it).
    EXPECT_EQ(cpu::UseDotExtension(*c), std::string(t.tier) == "avx2_vnni") << t.tier;
    EXPECT_EQ(TargetName(KernelConfig()), best) << t.tier;  // the default stays uncapped
  }
  // avx2_vnni is refused exactly where the CPU lacks AVX-VNNI (or AVX2).
  if (!cpu::HasDotExtension()) {
    EXPECT_FALSE(KernelConfigForTier("avx2_vnni").ok());
  }
  EXPECT_GE(capped, 1);  // every x86-64 CPU that runs this has SSE4
#endif
  const StatusOr<KernelConfig> none = KernelConfigForTier("");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(TargetName(*none), best);
  EXPECT_EQ(cpu::UseDotExtension(*none), cpu::HasDotExtension());
  const StatusOr<KernelConfig> ref = KernelConfigForTier("ref");
  ASSERT_TRUE(ref.ok());
  EXPECT_STREQ(TargetName(*ref), "reference");
}

// MINERU_KERNELS is read by KernelConfigFromEnv alone: a tier, the reference, nothing, or an
// error that names the variable.
TEST(SimdTierTest, ConfigFromTheEnvironment) {
  ASSERT_EQ(unsetenv("MINERU_KERNELS"), 0);
  StatusOr<KernelConfig> c = KernelConfigFromEnv();
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->reference);
  EXPECT_EQ(c->target, 0);
  ASSERT_EQ(setenv("MINERU_KERNELS", "reference", 1), 0);
  c = KernelConfigFromEnv();
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->reference);
  ASSERT_EQ(setenv("MINERU_KERNELS", "sse9", 1), 0);
  c = KernelConfigFromEnv();
  EXPECT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("MINERU_KERNELS"), std::string::npos) << c.status().message();
  ASSERT_EQ(unsetenv("MINERU_KERNELS"), 0);
}

// The dot-product probes (not per Highway target: CPUID decides) against their twins.
TEST(DotProbeTest, MatchesItsTwin) {
  for (DotKind kind : {DotKind::kBf16, DotKind::kInt8}) {
    for (int64_t iters : {0, 1, 7, 1000}) {
      const DotProbeResult got = cpu::DotProbe(kind, iters);
      const DotProbeResult want = ref::DotProbe(kind, iters, got.ok);
      EXPECT_EQ(got.ok, want.ok);
      EXPECT_EQ(got.value, want.value) << static_cast<int>(kind) << " " << iters;
      EXPECT_EQ(got.ops, want.ops) << static_cast<int>(kind) << " " << iters;
    }
  }
}

}  // namespace
}  // namespace kernels
}  // namespace mineru
