// Unit tests of the base layer: digests against published test vectors, the thread pool, bf16.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "base/bf16.h"
#include "base/hash.h"
#include "base/mapped_file.h"
#include "base/status.h"
#include "base/thread_pool.h"

namespace mineru {
namespace {

// A StatusOr built from an OK status holds an Internal error in every build type (it used to be
// an assert only, so release builds got an "ok" StatusOr with no value).
TEST(StatusTest, StatusOrFromOkIsAnInternalError) {
  StatusOr<int> a(Status::Ok());
  EXPECT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kInternal);
  Status ok = Status::Ok();
  StatusOr<std::string> b(std::move(ok));
  EXPECT_FALSE(b.ok());
  StatusOr<int> c(InvalidArgumentError("x"));
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
}

TEST(FilesTest, MakeDirsCreatesParentsAndReportsFailures) {
  const std::string root = ::testing::TempDir() + "/makedirs_" + std::to_string(::getpid());
  ASSERT_TRUE(MakeDirs(root + "/a/b/c").ok());
  EXPECT_TRUE(FileExists(root + "/a/b/c"));
  EXPECT_TRUE(MakeDirs(root + "/a/b").ok());  // exists: fine
  ASSERT_TRUE(WriteStringToFile(root + "/file", "x").ok());
  Status s = MakeDirs(root + "/file");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(root + "/file"), std::string::npos) << s.message();
  EXPECT_FALSE(MakeDirs(root + "/file/below").ok());
}

TEST(HashTest, Sha256Vectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  Sha256 s;  // streaming over odd chunk sizes equals one-shot
  std::string million(1000000, 'a');
  for (size_t i = 0; i < million.size(); i += 777)
    s.Update(million.data() + i, std::min<size_t>(777, million.size() - i));
  EXPECT_EQ(s.HexDigest(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(HashTest, Md5Vectors) {
  EXPECT_EQ(Md5Hex("", 0), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(Md5Hex("abc", 3), "900150983cd24fb0d6963f7d28e17f72");
  std::string s = "12345678901234567890123456789012345678901234567890123456789012345678901234567890";
  EXPECT_EQ(Md5Hex(s.data(), s.size()), "57edf4a22be3c955ac49da2e2107b67a");
}

TEST(ThreadPoolTest, CoversRangeExactlyOnce) {
  for (size_t threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (size_t n : {0, 1, 5, 17, 1000}) {
      std::vector<std::atomic<int>> hits(n);
      pool.ParallelFor(n, [&](size_t b, size_t e, size_t w) {
        EXPECT_LT(w, pool.num_threads());
        for (size_t i = b; i < e; ++i) hits[i]++;
      });
      for (size_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1);
    }
  }
}

// ParallelCopy copies every byte once, into place, for sizes around its piece boundaries, with
// and without a pool (and a pool of one thread).
TEST(ThreadPoolTest, ParallelCopyCopiesEveryByteInPlace) {
  for (size_t threads : {0, 1, 3}) {
    std::unique_ptr<ThreadPool> pool = threads ? std::make_unique<ThreadPool>(threads) : nullptr;
    for (size_t n : {0, 1, 63, 64, 65, 127, 128, 129, 1000, 4097}) {
      std::vector<unsigned char> src(n + 3), dst(n + 6, 0xAA);
      for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 131 + 7);
      ParallelCopy(dst.data() + 3, src.data() + 1, n, pool.get(), 64);  // unaligned both sides
      for (size_t i = 0; i < dst.size(); ++i) {
        const bool inside = i >= 3 && i < 3 + n;
        ASSERT_EQ(dst[i], inside ? src[i - 3 + 1] : 0xAA) << threads << " threads, n=" << n << ", byte " << i;
      }
    }
  }
}

TEST(ThreadPoolTest, AnExceptionInAChunkReachesTheCaller) {
  // std::bad_alloc in a kernel's scratch buffer, on any worker: the caller gets it (and can turn it
  // into an error status) instead of the process ending; the pool keeps working.
  ThreadPool pool(3);
  for (size_t bad : {0, 5, 99}) {
    std::atomic<int> ran{0};
    bool caught = false;
    try {
      pool.ParallelFor(
          100,
          [&](size_t b, size_t e, size_t) {
            ran++;
            if (b <= bad && bad < e) throw std::bad_alloc();
          },
          10);
    } catch (const std::bad_alloc&) {
      caught = true;
    }
    EXPECT_TRUE(caught) << bad;
    EXPECT_GE(ran.load(), 1);
    std::atomic<int> sum{0};
    pool.ParallelFor(100, [&](size_t b, size_t e, size_t) { sum += static_cast<int>(e - b); });
    EXPECT_EQ(sum.load(), 100);
  }
}

TEST(Bf16Test, RoundTripAndRounding) {
  EXPECT_EQ(Bf16ToF32(F32ToBf16(1.0f)), 1.0f);
  EXPECT_EQ(Bf16ToF32(F32ToBf16(-2.5f)), -2.5f);
  // 1 + 2^-8 is halfway between bf16 neighbours 1 and 1+2^-7: ties to even -> 1.
  EXPECT_EQ(Bf16ToF32(F32ToBf16(1.0f + 1.0f / 256)), 1.0f);
  EXPECT_EQ(F16ToF32(0x3c00), 1.0f);
  EXPECT_EQ(F16ToF32(0xc000), -2.0f);
  EXPECT_EQ(F16ToF32(0x0001), 5.960464477539063e-08f);  // smallest subnormal
}

}  // namespace
}  // namespace mineru
