// What sampling reads of a step's logits in GPU memory (model/cuda/logits_reader.h) against the
// CPU's answer to the same requests (kernels/logit_candidates.h + MergeCandidates, what
// CpuBackend::ReadLogits does): whole rows bit for bit, candidates as the same ids and raw values,
// over requests mixing whole rows, greedy, top_k and touched lists, twice over (the staging grows
// and is reused). Skips, saying why, without a GPU.

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "../util/cuda_skip.h"
#include "kernels/cuda/buffer.h"
#include "kernels/logit_candidates.h"
#include "model/backend.h"
#include "model/cuda/logits_reader.h"

namespace mineru {
namespace {

namespace cu = kernels::cuda;

RowLogits CpuAnswer(const float* row, int32_t vocab, const LogitsRequest& r) {
  RowLogits a;
  const std::vector<int32_t>& touched = r.touched_ids();
  const std::vector<int32_t> top =
      kernels::TopLogitsExcluding(row, vocab, touched.data(), touched.size(), r.top_k);
  std::vector<float> tl, vl;
  for (int32_t t : touched) tl.push_back(row[t]);
  for (int32_t t : top) vl.push_back(row[t]);
  MergeCandidates(touched, tl.data(), top.data(), vl.data(), top.size(), &a);
  return a;
}

TEST(CudaLogitsReaderTest, AnswersAsTheCpuDoes) {
  if (const std::string why = testing::CudaSkipReason(); !why.empty()) GTEST_SKIP() << why;
  auto stream = cu::CudaStream::Create();
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  CudaLogitsReader reader;
  std::mt19937 rng(3);
  std::normal_distribution<float> n(0.0f, 3.0f);
  for (int32_t vocab : {5, 151936}) {
    for (int round = 0; round < 2; ++round) {
      const int rows = round == 0 ? 6 : 19;
      std::vector<float> logits(static_cast<size_t>(rows) * vocab);
      for (float& x : logits) x = std::round(n(rng) * 4) / 4;
      std::vector<std::vector<int32_t>> touched(static_cast<size_t>(rows));
      std::vector<LogitsRequest> req(static_cast<size_t>(rows));
      for (int r = 0; r < rows; ++r) {
        req[r].top_k = std::vector<int>{0, 1, 20, 1, 1024, 3}[r % 6];
        for (int32_t t = r % 3; t < vocab; t += 2 + 31 * r) touched[r].push_back(t);
        req[r].touched = &touched[r];
      }
      auto dev = cu::DeviceBuffer::Allocate(logits.size() * sizeof(float));
      ASSERT_TRUE(dev.ok()) << dev.status().ToString();
      ASSERT_TRUE(dev->CopyFromHost(logits.data(), logits.size() * sizeof(float)).ok());
      std::vector<RowLogits> got;
      const Status st = reader.Read(*dev, vocab, req, *stream, &got);
      ASSERT_TRUE(st.ok()) << st.ToString();
      ASSERT_EQ(got.size(), req.size());
      for (int r = 0; r < rows; ++r) {
        SCOPED_TRACE("vocab " + std::to_string(vocab) + " row " + std::to_string(r));
        const float* row = logits.data() + static_cast<size_t>(r) * vocab;
        if (req[r].top_k == 0) {
          ASSERT_NE(got[r].row, nullptr);
          ASSERT_EQ(std::vector<float>(got[r].row, got[r].row + vocab), std::vector<float>(row, row + vocab));
          continue;
        }
        const RowLogits want = CpuAnswer(row, vocab, req[r]);
        EXPECT_EQ(got[r].row, nullptr);
        EXPECT_EQ(got[r].ids, want.ids);
        EXPECT_EQ(got[r].logits, want.logits);
      }
    }
  }
}

}  // namespace
}  // namespace mineru
