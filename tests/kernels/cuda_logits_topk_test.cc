// The candidate pick on the GPU (kernels/cuda/logits_topk.h) against its twin
// (kernels/logit_candidates.h's TopLogitsExcluding): the same candidate set, raw values and counts
// at awkward shapes (a vocabulary of one, sizes off the block's multiple, the real 151,936), rows
// of heavy ties, -inf, signed zeros and NaN, touched ids at both ends, every token touched, k past
// what is left, rows that want nothing picked (left as they were). Device tests skip without a GPU;
// the argument checks run everywhere.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "kernels/cuda/logits_topk.h"
#include "kernels/logit_candidates.h"

namespace mineru {
namespace kernels {
namespace cuda_test {
namespace {

class CudaLogitsTopKTest : public CudaDeviceTest {};

struct RowCase {
  int k;                         // 0: nothing picked
  std::vector<int32_t> touched;  // ascending, distinct
};

std::vector<float> TieRow(int32_t vocab, std::mt19937* rng) {
  std::normal_distribution<float> n(0.0f, 4.0f);
  std::vector<float> row(static_cast<size_t>(vocab));
  for (size_t i = 0; i < row.size(); ++i) {
    const uint32_t o = (*rng)() % 23;
    row[i] = o == 0   ? -std::numeric_limits<float>::infinity()
             : o == 1 ? -0.0f
             : o == 2 ? 0.0f
             : o == 3 ? std::numeric_limits<float>::quiet_NaN()
                      : std::round(n(*rng) * 2) / 2;  // half steps: many ties
  }
  return row;
}

void CheckRows(cu::StreamHandle stream, int32_t vocab, const std::vector<RowCase>& cases, uint32_t seed) {
  SCOPED_TRACE("vocab=" + std::to_string(vocab));
  std::mt19937 rng(seed);
  const int64_t rows = static_cast<int64_t>(cases.size());
  std::vector<float> logits;
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<float> row = TieRow(vocab, &rng);
    logits.insert(logits.end(), row.begin(), row.end());
  }
  std::vector<int32_t> offsets = {0}, touched, k;
  int max_k = 1;
  for (const RowCase& c : cases) {
    touched.insert(touched.end(), c.touched.begin(), c.touched.end());
    offsets.push_back(static_cast<int32_t>(touched.size()));
    k.push_back(c.k);
    max_k = std::max(max_k, c.k);
  }
  touched.push_back(0);  // never empty on the device
  CUDA_TEST_ASSIGN(DeviceArray<float> dl, ToDevice<float>(logits));
  CUDA_TEST_ASSIGN(cu::DeviceBuffer doff, IntsToDevice(offsets));
  CUDA_TEST_ASSIGN(cu::DeviceBuffer dtouched, IntsToDevice(touched));
  CUDA_TEST_ASSIGN(cu::DeviceBuffer dk, IntsToDevice(k));
  CUDA_TEST_ASSIGN(DeviceArray<float> tout, ToDevice<float>(std::vector<float>(touched.size(), 9.0f)));
  CUDA_TEST_ASSIGN(cu::DeviceBuffer ids,
                   IntsToDevice(std::vector<int32_t>(static_cast<size_t>(rows * max_k), -7)));
  CUDA_TEST_ASSIGN(DeviceArray<float> vals,
                   ToDevice<float>(std::vector<float>(static_cast<size_t>(rows * max_k))));
  CUDA_TEST_ASSIGN(cu::DeviceBuffer count, IntsToDevice(std::vector<int32_t>(static_cast<size_t>(rows), -1)));
  cu::LogitsTopKShape shape;
  shape.rows = rows;
  shape.vocab = vocab;
  shape.max_k = max_k;
  CUDA_TEST_ASSERT_OK(cu::LogitsTopK(dl.data(), shape, doff.as<int32_t>(), dtouched.as<int32_t>(),
                                     dk.as<int32_t>(), tout.data(), ids.as<int32_t>(), vals.data(),
                                     count.as<int32_t>(), stream));
  CUDA_TEST_ASSIGN(std::vector<float> after, ToHost(dl));
  CUDA_TEST_ASSIGN(std::vector<float> got_touched, ToHost(tout));
  CUDA_TEST_ASSIGN(std::vector<float> got_vals, ToHost(vals));
  std::vector<int32_t> got_ids(static_cast<size_t>(rows * max_k)), got_count(static_cast<size_t>(rows));
  CUDA_TEST_ASSERT_OK(ids.CopyToHost(got_ids.data(), got_ids.size() * 4));
  CUDA_TEST_ASSERT_OK(count.CopyToHost(got_count.data(), got_count.size() * 4));
  auto same = [](float a, float b) { return (std::isnan(a) && std::isnan(b)) || a == b; };
  for (int64_t r = 0; r < rows; ++r) {
    SCOPED_TRACE("row " + std::to_string(r) + " k " + std::to_string(cases[r].k));
    const float* raw = logits.data() + r * vocab;
    const RowCase& c = cases[r];
    for (size_t j = 0; j < c.touched.size(); ++j) {
      ASSERT_TRUE(same(got_touched[offsets[r] + j], raw[c.touched[j]])) << "touched " << c.touched[j];
    }
    for (int32_t t = 0; t < vocab; ++t) {  // touched entries NaN, the rest as they were
      const bool is_touched = std::binary_search(c.touched.begin(), c.touched.end(), t);
      ASSERT_TRUE(is_touched ? std::isnan(after[r * vocab + t]) : same(after[r * vocab + t], raw[t])) << t;
    }
    std::vector<int32_t> want = TopLogitsExcluding(raw, vocab, c.touched.data(), c.touched.size(), c.k);
    ASSERT_EQ(got_count[r], static_cast<int32_t>(want.size()));
    std::vector<int32_t> got(got_ids.begin() + r * max_k, got_ids.begin() + r * max_k + got_count[r]);
    for (int32_t i = 0; i < got_count[r]; ++i) {
      ASSERT_GE(got[i], 0);
      ASSERT_LT(got[i], vocab);
      ASSERT_TRUE(same(got_vals[r * max_k + i], raw[got[i]])) << "value of " << got[i];
    }
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    ASSERT_EQ(got, want);
  }
}

std::vector<int32_t> Every(int32_t vocab, int32_t step, int32_t from = 0) {
  std::vector<int32_t> v;
  for (int32_t t = from; t < vocab; t += step) v.push_back(t);
  return v;
}

TEST_F(CudaLogitsTopKTest, MatchesTheTwinAtAwkwardShapes) {
  for (int32_t vocab : {1, 7, 512, 513, 4099}) {
    const std::vector<RowCase> cases = {
        {1, {}},
        {1, Every(vocab, 1)},  // everything touched: nothing to pick
        {2, vocab > 1 ? std::vector<int32_t>{0, vocab - 1} : std::vector<int32_t>{0}},
        {0, Every(vocab, 3)},  // gather only
        {64, Every(vocab, 5, 1)},
        {1024, {}},  // past what is left in small rows
        {3, Every(vocab, 2)},
    };
    ASSERT_NO_FATAL_FAILURE(CheckRows(stream(), vocab, cases, static_cast<uint32_t>(vocab)));
  }
}

TEST_F(CudaLogitsTopKTest, ManyRowsOfTheRealVocabulary) {
  const int32_t vocab = 151936;
  std::vector<RowCase> cases;
  for (int r = 0; r < 40; ++r) {
    RowCase c;
    c.k = std::vector<int>{1, 1, 50, 0, 1024}[r % 5];
    c.touched = Every(vocab, 97 + 13 * r, r);  // hundreds to thousands touched
    cases.push_back(c);
  }
  ASSERT_NO_FATAL_FAILURE(CheckRows(stream(), vocab, cases, 5));
}

TEST(CudaLogitsTopKArgsTest, RejectsBadShapesAndAcceptsEmptyWork) {
  float* fake = reinterpret_cast<float*>(uintptr_t{256});
  int32_t* ints = reinterpret_cast<int32_t*>(uintptr_t{512});
  cu::LogitsTopKShape s;
  EXPECT_TRUE(cu::LogitsTopK(nullptr, s, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr).ok());
  s.rows = 2;
  s.vocab = 0;
  EXPECT_EQ(cu::LogitsTopK(fake, s, ints, ints, ints, fake, ints, fake, ints).code(),
            StatusCode::kInvalidArgument);
  s.vocab = 10;
  s.max_k = -1;
  EXPECT_EQ(cu::LogitsTopK(fake, s, ints, ints, ints, fake, ints, fake, ints).code(),
            StatusCode::kInvalidArgument);
  s.max_k = 4;
  EXPECT_EQ(cu::LogitsTopK(nullptr, s, ints, ints, ints, fake, ints, fake, ints).code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace cuda_test
}  // namespace kernels
}  // namespace mineru
