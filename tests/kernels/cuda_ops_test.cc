// The CUDA kernels (kernels/cuda/cuda_ops.h) against their scalar twins (kernels/reference.h) at
// awkward shapes, fp32 and bf16; the device probe; the argument checks.
//
// Tests that need a device skip, saying why, where there is none (CPU machines, CI);
// scripts/gpu_check.sh runs them on a GPU and fails if any skips there. The probe and argument
// tests run everywhere.
//
// Every comparison is |got - want| <= rel * |want| + abs, want = the twin run in fp32 on the very
// inputs the kernel saw (bf16 inputs are widened first):
//   fp32 norms        rel 1e-5, abs 1e-5  (block tree sums vs the twin's sequential float sums and
//                                          double LayerNorm sums; expected error ~1e-6)
//   fp32 LayerNorm,   rel 1e-4, abs 1e-4  (rows around 100: the fp32 mean carries ~1e-5 absolute)
//     large mean
//   fp32 activations  rel 1e-5, abs 1e-6  (CUDA's expf/erff are within 2 ulp; fma contraction;
//     and RoPE                             GELU's 1 + erf cancels to ~3 ulp of 1 times |x| / 2)
//   fp32 add          exact               (one IEEE addition in both)
//   bf16 outputs      rel 4e-3 (half a bf16 ulp is at most 2^-8 = 3.9e-3 of the value: the kernel
//                     rounds its fp32 result once), abs 1e-5, norms abs 1e-4 (fp32 error near 0)

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "base/status.h"
#include "cuda_test_util.h"
#include "kernels/cuda/buffer.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/staged_upload.h"
#include "kernels/reference.h"

namespace mineru {
namespace kernels {
namespace cuda_test {
namespace {

constexpr Tol kExact{0.0f, 0.0f};
constexpr Tol kNormF32{1e-5f, 1e-5f};
constexpr Tol kLargeMeanF32{1e-4f, 1e-4f};
constexpr Tol kPointF32{1e-5f, 1e-6f};
constexpr Tol kNormBf16{4e-3f, 1e-4f};
constexpr Tol kPointBf16{4e-3f, 1e-5f};

class CudaOpsTest : public CudaDeviceTest {};

// RmsNorm and LayerNorm of an [m, n] input in [lo, hi) as T, out of place and in place.
template <typename T>
void CheckNorms(cu::StreamHandle stream, int64_t m, int64_t n, float lo, float hi, Tol rms_tol, Tol ln_tol) {
  const std::string what = std::string(TypeName<T>()) + " m=" + std::to_string(m) + " n=" + std::to_string(n);
  const size_t count = static_cast<size_t>(m * n);
  const std::vector<float> x =
      Representable<T>(RandomVec(count, static_cast<uint32_t>(m * 7919 + n), lo, hi));
  const std::vector<float> w = RandomVec(static_cast<size_t>(n), 3, -1.0f, 1.0f);
  const std::vector<float> b = RandomVec(static_cast<size_t>(n), 4, -1.0f, 1.0f);
  const float eps = 1e-6f;
  std::vector<float> want(count);
  CUDA_TEST_ASSIGN(DeviceArray<T> dx, ToDevice<T>(x));
  CUDA_TEST_ASSIGN(DeviceArray<T> dy, ToDevice<T>(std::vector<float>(count, 0.0f)));
  CUDA_TEST_ASSIGN(DeviceArray<float> dw, ToDevice<float>(w));
  CUDA_TEST_ASSIGN(DeviceArray<float> db, ToDevice<float>(b));

  ref::RmsNorm(x.data(), m, n, w.data(), eps, want.data());
  CUDA_TEST_ASSERT_OK(cu::RmsNorm(dx.data(), m, n, dw.data(), eps, dy.data(), stream));
  CUDA_TEST_ASSIGN(std::vector<float> got, ToHost(dy));
  ExpectNear(got, want, rms_tol, "RmsNorm " + what);

  ref::LayerNorm(x.data(), m, n, w.data(), b.data(), eps, want.data());
  CUDA_TEST_ASSERT_OK(cu::LayerNorm(dx.data(), m, n, dw.data(), db.data(), eps, dy.data(), stream));
  CUDA_TEST_ASSIGN(got, ToHost(dy));
  ExpectNear(got, want, ln_tol, "LayerNorm " + what);

  // In place (y == x), LayerNorm then RmsNorm of its result.
  CUDA_TEST_ASSERT_OK(cu::LayerNorm(dx.data(), m, n, dw.data(), db.data(), eps, dx.data(), stream));
  CUDA_TEST_ASSIGN(got, ToHost(dx));
  ExpectNear(got, want, ln_tol, "LayerNorm in place " + what);
  const std::vector<float> ln = got;  // the kernel's own LayerNorm output, as T
  ref::RmsNorm(ln.data(), m, n, w.data(), eps, want.data());
  CUDA_TEST_ASSERT_OK(cu::RmsNorm(dx.data(), m, n, dw.data(), eps, dx.data(), stream));
  CUDA_TEST_ASSIGN(got, ToHost(dx));
  ExpectNear(got, want, rms_tol, "RmsNorm in place " + what);
}

TEST_F(CudaOpsTest, NormsF32) {
  for (int64_t n : {1, 3, 1279, 1280, 3584}) {
    for (int64_t m : {1, 7, 300}) {
      ASSERT_NO_FATAL_FAILURE(CheckNorms<float>(stream(), m, n, -4.0f, 6.0f, kNormF32, kNormF32));
    }
  }
}

TEST_F(CudaOpsTest, NormsBf16) {
  for (int64_t n : {1, 3, 1279, 1280, 3584}) {
    for (int64_t m : {1, 7, 300}) {
      ASSERT_NO_FATAL_FAILURE(CheckNorms<Bf16>(stream(), m, n, -4.0f, 6.0f, kNormBf16, kNormBf16));
    }
  }
}

// More rows than the kernels' grid (65,536 blocks): the row-stride loop.
TEST_F(CudaOpsTest, NormsManyRows) {
  ASSERT_NO_FATAL_FAILURE(CheckNorms<float>(stream(), 70001, 3, -4.0f, 6.0f, kNormF32, kNormF32));
  ASSERT_NO_FATAL_FAILURE(CheckNorms<Bf16>(stream(), 70001, 3, -4.0f, 6.0f, kNormBf16, kNormBf16));
}

// Rows around 100 with a spread of 8: the two-pass fp32 variance against the twin's double sums.
TEST_F(CudaOpsTest, LayerNormLargeMean) {
  ASSERT_NO_FATAL_FAILURE(CheckNorms<float>(stream(), 33, 1280, 96.0f, 104.0f, kNormF32, kLargeMeanF32));
}

// QuickGelu, GeluErf, SiluMul (out of place, and in place over gate) and AddInPlace over n values.
// add_tol: fp32 sums are one IEEE addition in both, so they must agree exactly.
template <typename T>
void CheckPointwise(cu::StreamHandle stream, int64_t n, Tol tol, Tol add_tol) {
  const std::string what = std::string(TypeName<T>()) + " n=" + std::to_string(n);
  const size_t count = static_cast<size_t>(n);
  const std::vector<float> x = Representable<T>(ActivationInputs(count, static_cast<uint32_t>(n)));
  const std::vector<float> up = Representable<T>(RandomVec(count, static_cast<uint32_t>(n + 1), -3.0f, 3.0f));
  std::vector<float> want = x;

  CUDA_TEST_ASSIGN(DeviceArray<T> dx, ToDevice<T>(x));
  ref::QuickGelu(want.data(), n);
  CUDA_TEST_ASSERT_OK(cu::QuickGelu(dx.data(), n, stream));
  CUDA_TEST_ASSIGN(std::vector<float> got, ToHost(dx));
  ExpectNear(got, want, tol, "QuickGelu " + what);

  want = x;
  CUDA_TEST_ASSIGN(dx, ToDevice<T>(x));
  ref::GeluErf(want.data(), n);
  CUDA_TEST_ASSERT_OK(cu::GeluErf(dx.data(), n, stream));
  CUDA_TEST_ASSIGN(got, ToHost(dx));
  ExpectNear(got, want, tol, "GeluErf " + what);

  CUDA_TEST_ASSIGN(dx, ToDevice<T>(x));
  CUDA_TEST_ASSIGN(DeviceArray<T> dup, ToDevice<T>(up));
  CUDA_TEST_ASSIGN(DeviceArray<T> dout, ToDevice<T>(std::vector<float>(count, 0.0f)));
  ref::SiluMul(x.data(), up.data(), n, want.data());
  CUDA_TEST_ASSERT_OK(cu::SiluMul(dx.data(), dup.data(), n, dout.data(), stream));
  CUDA_TEST_ASSIGN(got, ToHost(dout));
  ExpectNear(got, want, tol, "SiluMul " + what);
  CUDA_TEST_ASSERT_OK(cu::SiluMul(dx.data(), dup.data(), n, dx.data(), stream));
  CUDA_TEST_ASSIGN(got, ToHost(dx));
  ExpectNear(got, want, tol, "SiluMul in place " + what);

  want = x;
  CUDA_TEST_ASSIGN(dx, ToDevice<T>(x));
  ref::AddInPlace(want.data(), up.data(), n);
  CUDA_TEST_ASSERT_OK(cu::AddInPlace(dx.data(), dup.data(), n, stream));
  CUDA_TEST_ASSIGN(got, ToHost(dx));
  ExpectNear(got, want, add_tol, "AddInPlace " + what);
}

// 2^21 + 3 values is more than the elementwise grid holds (4,096 blocks of 256): the grid-stride loop.
TEST_F(CudaOpsTest, PointwiseF32) {
  for (int64_t n : {1, 3, 1279, 1280, 3584, (1 << 21) + 3}) {
    ASSERT_NO_FATAL_FAILURE(CheckPointwise<float>(stream(), n, kPointF32, kExact));
  }
}

TEST_F(CudaOpsTest, PointwiseBf16) {
  for (int64_t n : {1, 3, 1279, 1280, 3584, (1 << 21) + 3}) {
    ASSERT_NO_FATAL_FAILURE(CheckPointwise<Bf16>(stream(), n, kPointBf16, kPointBf16));
  }
}

struct RopeShape {
  int64_t n, num_heads, head_dim, x_stride;
};

// RopeRotateHalfRows over [n, x_stride] rows; the padding past num_heads * head_dim must stay as it
// was (compared too). cos/sin are random per half, so each half's index is checked.
template <typename T>
void CheckRope(cu::StreamHandle stream, const RopeShape& s, Tol tol) {
  const std::string what =
      std::string(TypeName<T>()) + " n=" + std::to_string(s.n) + " heads=" + std::to_string(s.num_heads) +
      " head_dim=" + std::to_string(s.head_dim) + " stride=" + std::to_string(s.x_stride);
  const auto seed = static_cast<uint32_t>(s.n * 31 + s.num_heads * 7 + s.head_dim);
  const std::vector<float> x =
      Representable<T>(RandomVec(static_cast<size_t>(s.n * s.x_stride), seed, -3.0f, 3.0f));
  const std::vector<float> cos = RandomVec(static_cast<size_t>(s.n * s.head_dim), seed + 1, -1.0f, 1.0f);
  const std::vector<float> sin = RandomVec(static_cast<size_t>(s.n * s.head_dim), seed + 2, -1.0f, 1.0f);
  std::vector<float> want = x;
  ref::RopeRotateHalfRows(want.data(), s.n, s.x_stride, s.num_heads, s.head_dim, cos.data(), sin.data());
  CUDA_TEST_ASSIGN(DeviceArray<T> dx, ToDevice<T>(x));
  CUDA_TEST_ASSIGN(DeviceArray<float> dcos, ToDevice<float>(cos));
  CUDA_TEST_ASSIGN(DeviceArray<float> dsin, ToDevice<float>(sin));
  CUDA_TEST_ASSERT_OK(cu::RopeRotateHalfRows(dx.data(), s.n, s.x_stride, s.num_heads, s.head_dim, dcos.data(),
                                             dsin.data(), stream));
  CUDA_TEST_ASSIGN(std::vector<float> got, ToHost(dx));
  ExpectNear(got, want, tol, "RopeRotateHalfRows " + what);
}

// One row, one pair; the ViT's 16 heads of 80 in its qkv rows (stride 3 * 1280, plus an odd pad);
// the decoder's 14 heads of 64; head_dim 128; many rows with an odd stride.
const RopeShape kRopeShapes[] = {
    {1, 1, 2, 2},       {1, 16, 80, 1280},    {7, 16, 80, 3 * 1280 + 5},
    {300, 14, 64, 896}, {5, 3, 128, 3 * 128}, {5000, 2, 64, 129},
};

TEST_F(CudaOpsTest, RopeF32) {
  for (const RopeShape& s : kRopeShapes) ASSERT_NO_FATAL_FAILURE(CheckRope<float>(stream(), s, kPointF32));
}

TEST_F(CudaOpsTest, RopeBf16) {
  for (const RopeShape& s : kRopeShapes) ASSERT_NO_FATAL_FAILURE(CheckRope<Bf16>(stream(), s, kPointBf16));
}

// RopeTables2D gathers exactly the twin's values (a copy: bit for bit) for heads of 4, 16 and 80
// (the ViT's), one row and many; a position outside the tables gives NaN, not a stray read.
TEST_F(CudaOpsTest, RopeTables2DGathersAsTheTwin) {
  const int64_t positions = 37;
  for (int64_t D : {4, 16, 80}) {
    for (int64_t n : {1, 7, 1001}) {
      const int64_t quarter = D / 4;
      const std::vector<float> freq = RandomVec(static_cast<size_t>(2 * positions * quarter), 5, -1.0f, 1.0f);
      std::vector<int32_t> hw(static_cast<size_t>(2 * n));
      for (size_t i = 0; i < hw.size(); ++i) hw[i] = static_cast<int32_t>((i * 7919 + D) % positions);
      std::vector<float> want_cos(static_cast<size_t>(n * D)), want_sin(want_cos.size());
      ref::RopeTables2D(freq.data(), freq.data() + positions * quarter, hw.data(), n, D, want_cos.data(),
                        want_sin.data());
      if (n > 1) hw[2 * (n - 1) + 1] = static_cast<int32_t>(positions);  // the last row's column: outside
      CUDA_TEST_ASSIGN(cu::DeviceBuffer dfreq, cu::DeviceBuffer::Allocate(freq.size() * 4));
      CUDA_TEST_ASSIGN(cu::DeviceBuffer dhw, cu::DeviceBuffer::Allocate(hw.size() * 4));
      CUDA_TEST_ASSIGN(cu::DeviceBuffer dcos, cu::DeviceBuffer::Allocate(want_cos.size() * 4));
      CUDA_TEST_ASSIGN(cu::DeviceBuffer dsin, cu::DeviceBuffer::Allocate(want_sin.size() * 4));
      CUDA_TEST_ASSERT_OK(dfreq.CopyFromHost(freq.data(), freq.size() * 4));
      CUDA_TEST_ASSERT_OK(dhw.CopyFromHost(hw.data(), hw.size() * 4));
      const float* f = dfreq.as<float>();
      CUDA_TEST_ASSERT_OK(cu::RopeTables2D(f, f + positions * quarter, positions, dhw.as<int32_t>(), n, D,
                                           dcos.as<float>(), dsin.as<float>(), stream()));
      CUDA_TEST_ASSERT_OK(stream_.Synchronize());
      std::vector<float> got_cos(want_cos.size()), got_sin(want_sin.size());
      CUDA_TEST_ASSERT_OK(dcos.CopyToHost(got_cos.data(), got_cos.size() * 4));
      CUDA_TEST_ASSERT_OK(dsin.CopyToHost(got_sin.data(), got_sin.size() * 4));
      const std::string what = "D=" + std::to_string(D) + " n=" + std::to_string(n);
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t d = 0; d < D; ++d) {
          const size_t at = static_cast<size_t>(i * D + d);
          const bool outside = n > 1 && i == n - 1 && d % (D / 2) >= quarter;
          if (outside) {
            EXPECT_TRUE(std::isnan(got_cos[at]) && std::isnan(got_sin[at]))
                << what << " row " << i << " col " << d;
          } else {
            ASSERT_EQ(got_cos[at], want_cos[at]) << what << " row " << i << " col " << d;
            ASSERT_EQ(got_sin[at], want_sin[at]) << what << " row " << i << " col " << d;
          }
        }
      }
    }
  }
  EXPECT_EQ(cu::RopeTables2D(nullptr, nullptr, 4, nullptr, 1, 6, nullptr, nullptr, stream()).code(),
            StatusCode::kInvalidArgument);
}

// The casts: fp32 -> bf16 rounds exactly as F32ToBf16 (ties to even, the halfway values built
// here; subnormals, infinities, the largest finite values, which round to infinity), NaN stays NaN;
// bf16 -> fp32 is exact. Odd length and an unaligned start (ToDevice's offset).
TEST_F(CudaOpsTest, CastsRoundAsTheTwin) {
  std::vector<float> x = RandomVec(1001, 21, -1000.0f, 1000.0f);
  auto from_bits = [](uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  };
  for (uint32_t u : {0x3f808000u, 0x3f818000u, 0xbf808000u, 0x00000001u, 0x807fffffu, 0x7f7fffffu,
                     0x7f800000u, 0xff800000u, 0x00000000u, 0x80000000u}) {
    x.push_back(from_bits(u));
  }
  x.push_back(std::nanf(""));
  CUDA_TEST_ASSIGN(DeviceArray<float> dx, ToDevice<float>(x));
  CUDA_TEST_ASSIGN(DeviceArray<Bf16> dy, ToDevice<Bf16>(std::vector<float>(x.size(), 0.0f)));
  CUDA_TEST_ASSERT_OK(cu::CastF32ToBf16(dx.data(), static_cast<int64_t>(x.size()), dy.data(), stream()));
  std::vector<Bf16> got(x.size());
  CUDA_TEST_ASSERT_OK(dy.buf.CopyToHost(got.data(), got.size() * sizeof(Bf16), dy.offset * sizeof(Bf16)));
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) {
      EXPECT_TRUE(std::isnan(Bf16ToF32(got[i].bits))) << "NaN at " << i;
    } else {
      EXPECT_EQ(got[i].bits, F32ToBf16(x[i])) << "at " << i << ": " << x[i];
    }
  }
  // Back: every bf16 value widens exactly.
  CUDA_TEST_ASSIGN(DeviceArray<float> back, ToDevice<float>(std::vector<float>(x.size(), 1.0f)));
  CUDA_TEST_ASSERT_OK(cu::CastBf16ToF32(dy.data(), static_cast<int64_t>(x.size()), back.data(), stream()));
  CUDA_TEST_ASSIGN(std::vector<float> wide, ToHost(back));
  for (size_t i = 0; i + 1 < x.size(); ++i) EXPECT_EQ(wide[i], Bf16ToF32(got[i].bits)) << "at " << i;
}

// StagedUpload (kernels/cuda/staged_upload.h) through a ring of three 1000-byte pinned chunks:
// copies of awkward sizes (none, one byte, a chunk less or more by one, many chunks) arrive whole
// and in place though each source is overwritten as soon as Copy returns; copies queued after
// WaitFor(stream) land after that stream's earlier work (a zeroing), and a stream ordered after
// the copies (OrderBefore) reads them all.
TEST_F(CudaOpsTest, StagedUploadCopiesWholeThroughTheRing) {
  CUDA_TEST_ASSIGN(cu::StagedUpload up, cu::StagedUpload::Create(1000, 3));
  const size_t sizes[] = {0, 1, 999, 1000, 1001, 2999, 3000, 7777, 5};
  size_t total = 0;
  for (size_t n : sizes) total += n;
  CUDA_TEST_ASSIGN(cu::DeviceBuffer dst, cu::DeviceBuffer::Allocate(total));
  for (int round = 0; round < 2; ++round) {
    CUDA_TEST_ASSERT_OK(dst.Zero(stream()));
    CUDA_TEST_ASSERT_OK(up.WaitFor(stream()));
    std::vector<uint8_t> want(total);
    size_t off = 0;
    for (size_t n : sizes) {
      std::vector<uint8_t> src(n);
      for (size_t i = 0; i < n; ++i) src[i] = static_cast<uint8_t>((off + i) * 131 + 7 + round);
      CUDA_TEST_ASSERT_OK(up.Copy(static_cast<char*>(dst.data()) + off, src.data(), n));
      std::memcpy(want.data() + off, src.data(), n);
      std::fill(src.begin(), src.end(), uint8_t{0xEE});  // staged already: the copy must not see this
      off += n;
    }
    CUDA_TEST_ASSERT_OK(up.OrderBefore(stream()));
    std::vector<uint8_t> got(total, 0);
    CUDA_TEST_ASSERT_OK(dst.CopyToHostAsync(got.data(), total, 0, stream()));
    CUDA_TEST_ASSERT_OK(stream_.Synchronize());
    for (size_t i = 0; i < total; ++i) ASSERT_EQ(got[i], want[i]) << "round " << round << " byte " << i;
  }
  // Chunks of 1 MiB filled by a pool's workers (ParallelCopy splits them): a copy of three chunks
  // and a bit arrives whole.
  ThreadPool pool(3);
  CUDA_TEST_ASSIGN(cu::StagedUpload pooled, cu::StagedUpload::Create(size_t{1} << 20, 2, &pool));
  const size_t big = (size_t{3} << 20) + 13;
  std::vector<uint8_t> src(big), back(big);
  for (size_t i = 0; i < big; ++i) src[i] = static_cast<uint8_t>(i * 2654435761u >> 24);
  CUDA_TEST_ASSIGN(cu::DeviceBuffer big_dst, cu::DeviceBuffer::Allocate(big));
  CUDA_TEST_ASSERT_OK(pooled.Copy(big_dst.data(), src.data(), big));
  CUDA_TEST_ASSERT_OK(pooled.OrderBefore(stream()));
  CUDA_TEST_ASSERT_OK(big_dst.CopyToHostAsync(back.data(), big, 0, stream()));
  CUDA_TEST_ASSERT_OK(stream_.Synchronize());
  EXPECT_TRUE(back == src) << "a pooled staged copy differs";
  EXPECT_EQ(cu::StagedUpload::Create(0, 3).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(up.Copy(nullptr, sizes, 4).code(), StatusCode::kInvalidArgument);
}

// The probe answers with or without a device, and never aborts.
TEST(CudaProbeTest, CountAndProperties) {
  std::string reason;
  const int count = cu::CudaDeviceCount(&reason);
  ASSERT_GE(count, 0);
  if (count == 0) {
    EXPECT_FALSE(reason.empty());
    std::cout << "no CUDA device: " << reason << "\n";
    const auto info = cu::GetCudaDeviceInfo(0);
    ASSERT_FALSE(info.ok());
    EXPECT_EQ(info.status().code(), StatusCode::kUnavailable) << info.status().ToString();
    EXPECT_FALSE(cu::ProbeUsableCudaDevice(0).ok());
    return;
  }
  EXPECT_TRUE(reason.empty()) << reason;
  for (int d = 0; d < count; ++d) {
    CUDA_TEST_ASSIGN(const cu::CudaDeviceInfo info, cu::GetCudaDeviceInfo(d));
    std::cout << cu::DescribeCudaDevice(info) << "\n";
    EXPECT_EQ(info.index, d);
    EXPECT_FALSE(info.name.empty());
    EXPECT_GE(info.cc_major, 1);
    EXPECT_GT(info.sm_count, 0);
    EXPECT_GT(info.total_bytes, 0);
    EXPECT_GT(info.free_bytes, 0);
    EXPECT_LE(info.free_bytes, info.total_bytes);
    EXPECT_GT(info.driver_version, 0);
    EXPECT_GT(info.runtime_version, 0);
  }
  for (int bad : {-1, count}) {
    const auto info = cu::GetCudaDeviceInfo(bad);
    ASSERT_FALSE(info.ok()) << bad;
    EXPECT_EQ(info.status().code(), StatusCode::kInvalidArgument) << info.status().ToString();
  }
}

TEST(CudaProbeTest, ComputeCapability) {
  cu::CudaDeviceInfo info;
  info.name = "test card";
  struct Case {
    int major, minor;
    bool ok;
  };
  for (const Case& c :
       {Case{7, 5, false}, Case{8, 0, true}, Case{8, 6, true}, Case{9, 0, true}, Case{10, 0, true}}) {
    info.cc_major = c.major;
    info.cc_minor = c.minor;
    const Status s = cu::CheckComputeCapability(info);
    EXPECT_EQ(s.ok(), c.ok) << c.major << "." << c.minor << ": " << s.ToString();
    if (!c.ok) {
      EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
      EXPECT_NE(s.message().find("7.5"), std::string::npos) << s.message();
    }
  }
}

// Buffers and streams: without a device every request fails with a Status (no abort); with one,
// copies round-trip and out-of-range copies are refused.
TEST(CudaProbeTest, BuffersAndStreams) {
  CUDA_TEST_ASSIGN(cu::DeviceBuffer empty, cu::DeviceBuffer::Allocate(0));
  EXPECT_EQ(empty.data(), nullptr);
  EXPECT_EQ(empty.size(), 0u);
  if (cu::CudaDeviceCount() == 0) {
    const auto buf = cu::DeviceBuffer::Allocate(64);
    ASSERT_FALSE(buf.ok());
    EXPECT_EQ(buf.status().code(), StatusCode::kUnavailable) << buf.status().ToString();
    const auto stream = cu::CudaStream::Create();
    ASSERT_FALSE(stream.ok());
    EXPECT_EQ(stream.status().code(), StatusCode::kUnavailable) << stream.status().ToString();
    // A well-formed launch (its pointers are never read: the launch itself fails).
    float* fake = reinterpret_cast<float*>(uintptr_t{256});
    const Status launch = cu::AddInPlace(fake, fake, 4);
    EXPECT_EQ(launch.code(), StatusCode::kUnavailable) << launch.ToString();
    return;
  }
  CUDA_TEST_ASSIGN(cu::CudaStream stream, cu::CudaStream::Create());
  EXPECT_NE(stream.handle(), nullptr);
  CUDA_TEST_ASSIGN(cu::DeviceBuffer buf, cu::DeviceBuffer::Allocate(64));
  EXPECT_NE(buf.data(), nullptr);
  const std::vector<uint8_t> in = {1, 2, 3, 4, 5, 6, 7, 8};
  CUDA_TEST_ASSERT_OK(buf.Zero(stream.handle()));
  CUDA_TEST_ASSERT_OK(buf.CopyFromHostAsync(in.data(), in.size(), 56, stream.handle()));
  std::vector<uint8_t> out(64, 0xff);
  CUDA_TEST_ASSERT_OK(buf.CopyToHostAsync(out.data(), out.size(), 0, stream.handle()));
  CUDA_TEST_ASSERT_OK(stream.Synchronize());
  for (size_t i = 0; i < 56; ++i) ASSERT_EQ(out[i], 0) << i;
  for (size_t i = 0; i < 8; ++i) ASSERT_EQ(out[56 + i], in[i]) << i;
  EXPECT_EQ(buf.CopyFromHost(in.data(), in.size(), 57).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(buf.CopyToHost(out.data(), 65).code(), StatusCode::kInvalidArgument);
  cu::DeviceBuffer moved = std::move(buf);
  EXPECT_EQ(buf.data(), nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state is the contract
  EXPECT_EQ(moved.size(), 64u);
  CUDA_TEST_ASSERT_OK(moved.CopyToHost(out.data(), 8, 56));
  EXPECT_EQ(out[0], 1);
}

// Argument checks happen before anything touches the device: these run everywhere.
TEST(CudaOpsArgsTest, RejectsBadShapesAndAcceptsEmptyWork) {
  float* fake = reinterpret_cast<float*>(uintptr_t{256});
  const float* cfake = fake;
  EXPECT_EQ(cu::RmsNorm(cfake, -1, 4, cfake, 1e-6f, fake).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cu::LayerNorm(cfake, 2, -4, cfake, cfake, 1e-6f, fake).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cu::QuickGelu(fake, -1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cu::SiluMul(cfake, nullptr, 5, fake).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cu::AddInPlace(fake, nullptr, 5).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cu::RmsNorm(cfake, 2, 4, nullptr, 1e-6f, fake).code(), StatusCode::kInvalidArgument);
  // RoPE: odd head_dim, rows narrower than their heads.
  EXPECT_EQ(cu::RopeRotateHalfRows(fake, 2, 16, 2, 7, cfake, cfake).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cu::RopeRotateHalfRows(fake, 2, 15, 2, 8, cfake, cfake).code(), StatusCode::kInvalidArgument);
  // Nothing to do: Ok without a launch, null pointers included.
  EXPECT_TRUE(cu::RmsNorm(static_cast<const float*>(nullptr), 0, 4, nullptr, 1e-6f, nullptr).ok());
  EXPECT_TRUE(cu::LayerNorm(static_cast<const Bf16*>(nullptr), 3, 0, nullptr, nullptr, 1e-6f, nullptr).ok());
  EXPECT_TRUE(cu::GeluErf(static_cast<Bf16*>(nullptr), 0).ok());
  EXPECT_TRUE(cu::SiluMul(static_cast<const float*>(nullptr), nullptr, 0, nullptr).ok());
  EXPECT_TRUE(cu::RopeRotateHalfRows(static_cast<float*>(nullptr), 0, 8, 2, 4, nullptr, nullptr).ok());
  EXPECT_EQ(cu::CastF32ToBf16(cfake, -1, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cu::CastBf16ToF32(nullptr, 3, fake).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(cu::CastF32ToBf16(static_cast<const float*>(nullptr), 0, nullptr).ok());
}

}  // namespace
}  // namespace cuda_test
}  // namespace kernels
}  // namespace mineru
