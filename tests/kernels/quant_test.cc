// Quantized weights: the byte layouts (GGUF Q8_0/Q4_0 compatible), f16 rounding, quantize /
// dequantize round trips, and the quantized MatMul — SIMD vs its scalar twin on every
// target (integer path and dequantized-panel path) and vs "dequantize, then fp32 MatMul".

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/quant_internal.h"
#include "kernels/reference.h"

namespace mineru {
namespace kernels {
namespace {

using testing::DenseWeights;
using testing::RandomVec;

const QuantType kTypes[] = {QuantType::kQ8_0, QuantType::kQ4_0, QuantType::kQ4_G128};

TEST(F16Test, RoundTripsEveryHalfAndRoundsToNearestEven) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = F16ToF32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(F16ToF32(F32ToF16(f))));
      continue;
    }
    ASSERT_EQ(F32ToF16(f), h) << h;
  }
  EXPECT_EQ(F32ToF16(1.0f + 1.0f / 2048), F32ToF16(1.0f));                // tie -> even
  EXPECT_EQ(F32ToF16(1.0f + 3.0f / 2048), F32ToF16(1.0f + 4.0f / 2048));  // tie -> even (up)
  EXPECT_EQ(F32ToF16(70000.0f), 0x7c00);
  EXPECT_EQ(F32ToF16(-1e-10f), 0x8000);
  EXPECT_EQ(F32ToF16(65519.0f), 0x7bff);
}

TEST(QuantLayoutTest, SizesAndNames) {
  EXPECT_EQ(QuantizedRowBytes(QuantType::kQ8_0, 64), 68u);
  EXPECT_EQ(QuantizedRowBytes(QuantType::kQ8_0, 33), 68u);
  EXPECT_EQ(QuantizedRowBytes(QuantType::kQ4_0, 1176), 37u * 18u);
  EXPECT_EQ(QuantizedRowBytes(QuantType::kQ4_G128, 896), 7u * 66u);
  EXPECT_STREQ(QuantTypeName(QuantType::kQ4_G128), "q4_g128");
}

TEST(QuantLayoutTest, Q8_0BlockMatchesGguf) {
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[i] = static_cast<float>(i - 16) * 0.5f;  // max |x| = 8
  const QuantizedMatrix q = Quantize(DenseWeights(x, 1, 32, DType::kF32).view(), QuantType::kQ8_0);
  ASSERT_EQ(q.size_bytes(), 34u);
  uint16_t d;
  std::memcpy(&d, q.data(), 2);
  EXPECT_EQ(d, F32ToF16(8.0f / 127.0f));
  const int8_t* qs = reinterpret_cast<const int8_t*>(q.data() + 2);
  EXPECT_EQ(qs[0], -127);
  EXPECT_EQ(qs[16], 0);
  EXPECT_EQ(qs[17], static_cast<int8_t>(std::nearbyint(0.5f / F16ToF32(d))));
}

TEST(QuantLayoutTest, Q4_0NibbleOrderMatchesGguf) {
  // Value i < 16 in the low nibble of byte i, value i + 16 in the high nibble.
  std::vector<float> x(32, 0.0f);
  x[0] = -8.0f;  // largest magnitude -> nibble 0, d = 1
  x[1] = 3.0f;
  x[17] = -2.0f;
  x[31] = 7.0f;
  const QuantizedMatrix q = Quantize(DenseWeights(x, 1, 32, DType::kF32).view(), QuantType::kQ4_0);
  ASSERT_EQ(q.size_bytes(), 18u);
  uint16_t d;
  std::memcpy(&d, q.data(), 2);
  EXPECT_EQ(F16ToF32(d), 1.0f);
  const uint8_t* qs = q.data() + 2;
  EXPECT_EQ(qs[0], 0x80);   // lo: -8+8 = 0, hi (value 16 = 0): 8
  EXPECT_EQ(qs[1], 0x6b);   // lo: 3+8 = 11, hi (value 17 = -2): 6
  EXPECT_EQ(qs[15], 0xf8);  // lo: value 15 = 0 -> 8, hi (value 31 = 7): 15
  std::vector<float> back(32);
  DequantizeRow(q.view(), 0, back.data());
  EXPECT_EQ(back, x);
}

TEST(QuantTest, RoundTripErrorWithinHalfAStep) {
  for (QuantType t : kTypes) {
    for (int64_t cols : {1, 31, 32, 100, 128, 300}) {
      const int64_t rows = 3;
      std::vector<float> x = RandomVec(static_cast<size_t>(rows * cols), 11, -3.0f, 3.0f);
      const QuantizedMatrix q = Quantize(DenseWeights(x, rows, cols, DType::kF32).view(), t);
      ASSERT_EQ(q.size_bytes(), QuantizedRowBytes(t, cols) * rows);
      const int64_t bs = QuantBlockSize(t);
      std::vector<float> back(static_cast<size_t>(cols));
      for (int64_t r = 0; r < rows; ++r) {
        DequantizeRow(q.view(), r, back.data());
        for (int64_t b0 = 0; b0 < cols; b0 += bs) {
          float amax = 0.0f;
          for (int64_t i = b0; i < std::min(cols, b0 + bs); ++i)
            amax = std::max(amax, std::fabs(x[r * cols + i]));
          // q8: step amax/127; q4: step amax/8 (nibbles reach +7 only: |err| <= step).
          const float step = t == QuantType::kQ8_0 ? amax / 127.0f : amax / 8.0f;
          const float tol = (t == QuantType::kQ8_0 ? 0.5f : 1.0f) * step * 1.002f + 1e-7f;
          for (int64_t i = b0; i < std::min(cols, b0 + bs); ++i) {
            ASSERT_LE(std::fabs(back[i] - x[r * cols + i]), tol)
                << QuantTypeName(t) << " cols=" << cols << " i=" << i;
          }
        }
      }
    }
  }
}

TEST(QuantTest, QuantizeFromBf16AndMappedViewAgree) {
  std::vector<float> x = RandomVec(5 * 96, 3);
  const DenseWeights wb(x, 5, 96, DType::kBF16, 1);
  const QuantizedMatrix q = Quantize(wb.view(), QuantType::kQ4_G128);
  // Streaming rows into an external (misaligned) buffer gives the same bytes.
  std::vector<uint8_t> ext(q.size_bytes() + 1);
  QuantizeRows(wb.view(), QuantType::kQ4_G128, 0, 5, ext.data() + 1);
  EXPECT_EQ(0, std::memcmp(ext.data() + 1, q.data(), q.size_bytes()));
  const WeightView v = QuantizedView(QuantType::kQ4_G128, ext.data() + 1, 5, 96);
  std::vector<float> a(96), b(96);
  for (int r = 0; r < 5; ++r) {
    WeightRowToF32(v, r, a.data(), KernelConfig());
    ref::WeightRowToF32(q.view(), r, b.data());
    EXPECT_EQ(a, b);
  }
}

class QuantMatMulTest : public testing::PerTarget {};

struct Case {
  int64_t m, n, k;
};

// The kernels of ctx against their twin (on the calling thread, ctx's configuration).
void CheckQuantCase(QuantType t, const Case& c, const KernelContext& ctx, uint32_t seed) {
  std::vector<float> xbuf = RandomVec(static_cast<size_t>(c.m * c.k + 1), seed);
  const float* x = xbuf.data() + 1;  // misaligned
  const std::vector<float> wv = RandomVec(static_cast<size_t>(c.n * c.k), seed + 1);
  const QuantizedMatrix qm = Quantize(DenseWeights(wv, c.n, c.k, DType::kBF16).view(), t);
  // Misaligned copy of the quantized bytes (as if mapped at an odd offset).
  std::vector<uint8_t> bytes(qm.size_bytes() + 3);
  std::memcpy(bytes.data() + 3, qm.data(), qm.size_bytes());
  const WeightView w = QuantizedView(t, bytes.data() + 3, c.n, c.k);
  const std::vector<float> bias = RandomVec(static_cast<size_t>(c.n), seed + 2);

  // Dequantized dense copy: the "dequantize, then reference" baseline.
  std::vector<float> deq(static_cast<size_t>(c.n * c.k));
  for (int64_t j = 0; j < c.n; ++j) DequantizeRow(w, j, deq.data() + j * c.k);
  const WeightView wd{DType::kF32, deq.data(), c.n, c.k};
  std::vector<float> base(static_cast<size_t>(c.m * c.n)), twin(base.size()), simd(base.size(), NAN),
      simd_int(base.size(), NAN), prepacked(base.size(), NAN);
  ref::MatMul(x, c.m, wd, bias.data(), base.data(), ctx.Serial(0));
  ref::MatMul(x, c.m, w, bias.data(), twin.data(), ctx.Serial(0));
  MatMul(x, c.m, w, bias.data(), simd.data(), ctx);                   // the auto rule
  cpu::MatMulQuantInt(x, c.m, w, bias.data(), simd_int.data(), ctx);  // integer path at any m
  // Panels packed once (VNNI CPUs; elsewhere empty and ignored) run at every m, one row too.
  const PackedPanels panels = PackIntegerPanels(w, ctx);
  WeightView wp = w;
  wp.panels = panels.data();
  MatMul(x, c.m, wp, bias.data(), prepacked.data(), ctx);

  // Scale of each output: sum |x| |w| + |b|. The Q4 formats' integer paths may sum unsigned
  // nibbles and subtract the "- 8" part afterwards (the twin does), so their rounding scales
  // with sum |x| * 8 d = sum |x| * max |w| of each block instead: the larger of the two.
  const int64_t block = QuantBlockSize(t);
  std::vector<float> scale(base.size());
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      double s = std::fabs(bias[j]), s4 = s;
      for (int64_t b0 = 0; b0 < c.k; b0 += block) {
        const int64_t b1 = std::min(c.k, b0 + block);
        float wmax = 0.0f;
        for (int64_t kk = b0; kk < b1; ++kk) wmax = std::max(wmax, std::fabs(deq[j * c.k + kk]));
        for (int64_t kk = b0; kk < b1; ++kk) {
          s += std::fabs(x[i * c.k + kk] * deq[j * c.k + kk]);
          s4 += std::fabs(x[i * c.k + kk]) * wmax;
        }
      }
      scale[i * c.n + j] = static_cast<float>(t == QuantType::kQ8_0 ? s : std::max(s, s4));
    }
  }
  const bool int_path = c.m < QuantDequantMinRows(ctx.config());
  int bad = 0;
  for (size_t i = 0; i < base.size(); ++i) {
    const float s = scale[i];
    // SIMD vs its twin: same arithmetic up to summation order.
    if (!(std::fabs(simd[i] - twin[i]) <= 5e-6f * s + 1e-6f)) ++bad;
    // The twin vs dequantize-then-fp32: activation rounding is at most half a step of
    // max|x|/127 per block, so |err| <= sum |w| * max|x| / 254 <= s * (max|x|/|x|)…; bound it
    // loosely by 1% of the scale (and tightly on the dequantized path).
    const float tol = int_path ? 1e-2f * s + 1e-5f : 5e-6f * s + 1e-6f;
    if (!(std::fabs(twin[i] - base[i]) <= tol)) ++bad;
    if (!(std::fabs(simd_int[i] - (int_path ? twin[i] : simd_int[i])) <= 5e-6f * s + 1e-6f)) ++bad;
    if (!(std::fabs(prepacked[i] - simd[i]) <= 5e-6f * s + 1e-6f)) ++bad;
    if (bad && bad < 4) {
      ADD_FAILURE() << QuantTypeName(t) << " m=" << c.m << " n=" << c.n << " k=" << c.k << " i=" << i
                    << " simd=" << simd[i] << " twin=" << twin[i] << " base=" << base[i]
                    << " int=" << simd_int[i] << " prepacked=" << prepacked[i];
      bad = 4;
    }
  }
  EXPECT_EQ(bad, 0);
}

// Runs body(config) once per integer instruction set of base's target: on CPUs with a dot-product
// extension (x86 AVX-VNNI: vpdpbusd vs vpmaddubsw panels; ARM dotprod: sdot vs portable tiles)
// and with ARM's int8 matrix multiply (smmla tiles for pairs of rows and columns) the integer
// kernels run with and without each, so all are tested on every such CPU.
template <class F>
void ForEachDotExtensionChoice(const KernelConfig& base, F body) {
  for (bool dot : {false, true}) {
    for (bool mm : {false, true}) {
      if ((dot && !cpu::HasDotExtension()) || (mm && !cpu::HasI8mm())) continue;
      KernelConfig config = base;
      config.dot_extension = dot;
      config.i8mm = mm;
      SCOPED_TRACE(std::string(dot ? "dot product extension allowed" : "no dot product extension") +
                   (mm ? ", i8mm allowed" : ""));
      body(config);
    }
  }
}

// CI's qemu stage names the CPU features its emulated CPU has (MINERU_EXPECT_I8MM=1 on qemu's
// `max`), so that a probe that stops seeing them fails instead of leaving a kernel untested.
TEST(CpuFeatureTest, TheProbeSeesTheFeaturesTheRunnerExpects) {
  const char* want = std::getenv("MINERU_EXPECT_I8MM");
  if (want != nullptr) {
    EXPECT_EQ(cpu::HasI8mm(), std::string(want) == "1");
  }
  if (HWY_ARCH_X86) {
    EXPECT_FALSE(cpu::HasI8mm());  // an ARM feature
  }
  // MINERU_EXPECT_TARGET: the Highway target the dispatch must pick there (SVE2_128 and SVE_256
  // on qemu's `max` with 128- and 256-bit vectors), so the SVE kernels cannot silently go untested.
  const char* target = std::getenv("MINERU_EXPECT_TARGET");
  if (target != nullptr) {
    EXPECT_STREQ(cpu::DispatchedTargetName(KernelConfig()), target);
  }
}

TEST_P(QuantMatMulTest, MatchesTwinAndDequantizedReference) {
  const Case cases[] = {{1, 1, 32},   {1, 5, 33},    {2, 33, 100}, {3, 7, 128},   {4, 9, 300},   {5, 5, 257},
                        {7, 33, 64},  {1, 40, 1176}, {15, 9, 64},  {16, 16, 32},  {17, 23, 300}, {47, 6, 160},
                        {48, 17, 96}, {50, 33, 300}, {9, 3, 1},    {203, 37, 96}, {33, 1, 1200}};
  ForEachDotExtensionChoice(config(), [&](const KernelConfig& config) {
    uint32_t seed = 40;
    const KernelWorkspace ctx(config, nullptr);
    for (QuantType t : kTypes) {
      for (const Case& c : cases) CheckQuantCase(t, c, ctx, seed++);
    }
  });
}

TEST_P(QuantMatMulTest, WithPoolAndManyColumns) {
  ThreadPool pool(3);
  ForEachDotExtensionChoice(config(), [&](const KernelConfig& config) {
    uint32_t seed = 400;
    const KernelWorkspace ctx(config, &pool);
    for (QuantType t : kTypes) {
      // The last three are large enough for the kernels to actually use the pool.
      for (const Case& c : {Case{1, 257, 256}, Case{6, 100, 512}, Case{60, 150, 384}, Case{8, 700, 1024},
                            Case{400, 70, 640}}) {
        CheckQuantCase(t, c, ctx, seed++);
      }
    }
  });
}

// The x86 integer panels give the same bits with and without AVX-VNNI (both sum exact integers
// per group and share the float epilogue). (ARM's sdot tiles sum in another order than the
// portable ones: the twin tests above cover them.)
TEST_P(QuantMatMulTest, AvxVnniAndAvx2PanelsAgreeBitForBit) {
  if (!HWY_ARCH_X86 || !cpu::HasDotExtension()) GTEST_SKIP() << "not an x86 CPU with AVX-VNNI";
  ThreadPool pool(2);
  uint32_t seed = 700;
  for (QuantType t : kTypes) {
    for (const Case& c : {Case{16, 33, 300}, Case{70, 64, 1280}, Case{250, 20, 96}}) {
      const std::vector<float> x = RandomVec(static_cast<size_t>(c.m * c.k), seed++);
      const QuantizedMatrix qm = Quantize(
          DenseWeights(RandomVec(static_cast<size_t>(c.n * c.k), seed++), c.n, c.k, DType::kF32).view(), t);
      std::vector<float> a(static_cast<size_t>(c.m * c.n)), b(a.size());
      KernelConfig avx2 = config(), avx_vnni = config();
      avx2.dot_extension = false;
      avx_vnni.dot_extension = true;
      cpu::MatMulQuantInt(x.data(), c.m, qm.view(), nullptr, a.data(), KernelWorkspace(avx2, &pool));
      cpu::MatMulQuantInt(x.data(), c.m, qm.view(), nullptr, b.data(), KernelWorkspace(avx_vnni, &pool));
      ASSERT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)))
          << QuantTypeName(t) << " m=" << c.m << " n=" << c.n << " k=" << c.k;
    }
  }
}

TEST_P(QuantMatMulTest, IntegerPathAgreesWithTwinForAllRowCounts) {
  // The integer path at m >= kQuantDequantMinRows (not used by MatMul, but callable) too.
  for (QuantType t : kTypes) {
    const Case c{53, 11, 200};
    std::vector<float> x = RandomVec(static_cast<size_t>(c.m * c.k), 5);
    const QuantizedMatrix qm =
        Quantize(DenseWeights(RandomVec(static_cast<size_t>(c.n * c.k), 6), c.n, c.k, DType::kF32).view(), t);
    std::vector<float> a(static_cast<size_t>(c.m * c.n)), b(a.size());
    const KernelWorkspace ctx = Ctx();
    cpu::MatMulQuantInt(x.data(), c.m, qm.view(), nullptr, a.data(), ctx);
    // Twin: row by row (m = 1 always takes the integer path in the reference).
    for (int64_t i = 0; i < c.m; ++i)
      ref::MatMul(x.data() + i * c.k, 1, qm.view(), nullptr, b.data() + i * c.n, ctx);
    for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-4f) << QuantTypeName(t) << " " << i;
  }
}

TEST_P(QuantMatMulTest, PrepackedPanelsGiveTheSameBitsAsPackingPerCall) {
  // On VNNI CPUs the panels are built (nibbles for the Q4 formats) and must be used: from 4 rows,
  // where MatMul packs panels per call without them, the same bits; below, where it runs the row
  // tiles instead, CheckQuantCase compares them with the twin. Elsewhere they are empty and
  // MatMul ignores the field.
  ThreadPool pool(2);
  const KernelWorkspace ctx = Ctx(&pool);
  uint32_t seed = 900;
  for (QuantType t : kTypes) {
    for (const Case& c : {Case{1, 33, 300}, Case{3, 40, 256}, Case{4, 17, 1176}, Case{7, 700, 256},
                          Case{16, 48, 96}, Case{50, 31, 160}}) {
      const std::vector<float> x = RandomVec(static_cast<size_t>(c.m * c.k), seed++);
      const QuantizedMatrix qm = Quantize(
          DenseWeights(RandomVec(static_cast<size_t>(c.n * c.k), seed++), c.n, c.k, DType::kF32).view(), t);
      const PackedPanels panels = PackIntegerPanels(qm.view(), ctx);
      EXPECT_EQ(panels.empty(), !IntegerPanelsAvailable(config()));
      if (!panels.empty()) {
        // As many bytes as 16 rows per panel, give or take the padding of a panel's scales (int8
        // values unpacked from nibbles would take 1.9x for the Q4 formats).
        const size_t npanels = static_cast<size_t>((c.n + 15) / 16);
        EXPECT_LE(panels.size_bytes(), npanels * (16 * QuantizedRowBytes(t, c.k) + 64)) << QuantTypeName(t);
      }
      WeightView packed = qm.view();
      packed.panels = panels.data();
      std::vector<float> a(static_cast<size_t>(c.m * c.n)), b(a.size());
      MatMul(x.data(), c.m, qm.view(), nullptr, a.data(), ctx);
      MatMul(x.data(), c.m, packed, nullptr, b.data(), ctx);
      if (c.m < 4 && !panels.empty()) continue;
      ASSERT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)))
          << QuantTypeName(t) << " m=" << c.m << " n=" << c.n << " k=" << c.k;
    }
  }
}

// The int8 activations a workspace keeps between calls change no bit: integer products of growing
// and shrinking shapes through one workspace equal the same products through fresh ones. The
// workspace holds them after the calls, nothing after ReleaseScratch, and serves again after that.
TEST_P(QuantMatMulTest, KeptActivationsChangeNoBitAndAreReleased) {
  ThreadPool pool(2);
  KernelWorkspace kept = Ctx(&pool);
  uint32_t seed = 1300;
  for (int round = 0; round < 2; ++round) {
    for (QuantType t : kTypes) {
      for (const Case& c : {Case{40, 33, 300}, Case{3, 17, 96}, Case{64, 40, 1024}, Case{1, 9, 64}}) {
        const std::vector<float> x = RandomVec(static_cast<size_t>(c.m * c.k), seed++);
        const QuantizedMatrix qm = Quantize(
            DenseWeights(RandomVec(static_cast<size_t>(c.n * c.k), seed++), c.n, c.k, DType::kF32).view(), t);
        std::vector<float> want(static_cast<size_t>(c.m * c.n)), got(want.size());
        cpu::MatMulQuantInt(x.data(), c.m, qm.view(), nullptr, want.data(), Ctx(&pool));
        cpu::MatMulQuantInt(x.data(), c.m, qm.view(), nullptr, got.data(), kept);
        ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)))
            << QuantTypeName(t) << " m=" << c.m << " n=" << c.n << " k=" << c.k;
      }
    }
    EXPECT_GT(kept.scratch_bytes(), 0u);
    kept.ReleaseScratch();
    EXPECT_EQ(kept.scratch_bytes(), 0u);
  }
}

MINERU_INSTANTIATE_PER_TARGET(QuantMatMulTest);

TEST(ActQuantTest, SimdAndScalarQuantizersProduceTheSameBytes) {
  // Checked indirectly through m = 1 MatMul on every target above; here the scalar
  // quantizer's own contract: round to nearest even, zero padding, corr = 8 d sum(q).
  const std::vector<float> x = {1.27f, -0.5f, 0.005f, 0.0f, 0.635f};
  const internal::ActLayout l = internal::MakeActLayout(QuantType::kQ8_0, 5);
  ASSERT_EQ(l.kpad, 32);
  std::vector<int8_t> q(32, 99);
  float d, corr;
  internal::QuantizeActRowRef(x.data(), 5, l, q.data(), &d, &corr);
  EXPECT_FLOAT_EQ(d, 1.27f / 127.0f);
  EXPECT_EQ(q[0], 127);
  EXPECT_EQ(q[1], -50);
  EXPECT_EQ(q[2], static_cast<int8_t>(std::nearbyint(0.005f * (1.0f / d))));
  for (int i = 5; i < 32; ++i) EXPECT_EQ(q[i], 0);
  int sum = 0;
  for (int i = 0; i < 32; ++i) sum += q[i];
  EXPECT_FLOAT_EQ(corr, d * static_cast<float>(8 * sum));
}

}  // namespace
}  // namespace kernels
}  // namespace mineru
