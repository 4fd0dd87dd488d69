// The engine on the CUDA backend (EngineConfig::device kCuda, fp32): the goldens' greedy ids in
// every batch composition the CPU engine test runs (everything at once, prefill in chunks of 7
// tokens, a KV pool small enough to preempt, one sequence at a time; and every image in a vision
// pass of its own, the passes overlapping), with duplicates sharing
// prefixes and seeded requests beside them; every block returned at the end; bf16 runs the same
// requests to completion. The seeded requests' ids are not compared alone against batched here,
// as the CPU test does: cuBLASLt may pick another algorithm (another summation order) for another
// row count, so a sampled token may differ in the last bits of its logits.
// Skips without a usable GPU, saying why; scripts/gpu_check.sh runs it on one.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <tuple>

#include "../util/cuda_skip.h"
#include "engine/engine.h"
#include "engine_test_util.h"
#include "kernels/cuda/device.h"

namespace mineru {
namespace {

using testing::FixturePath;
using testing::GreedyRequest;
using testing::LoadCases;
using testing::Unrelated;

struct Variant {
  int max_batch_tokens, kv_blocks, max_seqs;
  int64_t max_patches = 0;  // > 0: patches per vision pass (1: an image a pass, the passes pipelined)
};

class CudaEngineTest : public ::testing::TestWithParam<std::tuple<std::string, Variant>> {
 protected:
  void SetUp() override {
    if (const std::string why = testing::CudaSkipReason(); !why.empty()) GTEST_SKIP() << why;
  }
};

TEST_P(CudaEngineTest, GoldensReproduceInAnyBatchComposition) {
  const std::string model_name = std::get<0>(GetParam());
  const Variant v = std::get<1>(GetParam());
  auto model = Qwen2VLModel::Load(FixturePath(model_name)).value();
  auto cases = LoadCases(model_name, model->config().image_token_id);
  EngineConfig cfg;
  cfg.threads = 2;
  cfg.max_batch_tokens = v.max_batch_tokens;
  // A fixed pool where the variant does not shrink it: sized from --gpu-memory, the tiny models'
  // blocks would number millions (a large BlockPool on the host for nothing).
  cfg.kv_blocks = v.kv_blocks > 0 ? v.kv_blocks : 2048;
  cfg.max_seqs = v.max_seqs;
  cfg.device.device = ComputeDevice::kCuda;
  cfg.device.gpu_fp32 = true;
  cfg.device.gpu_memory = 0.5;
  cfg.device.gpu_max_patches = v.max_patches;
  auto engine = Engine::Create(*model, nullptr, cfg);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  std::vector<std::shared_ptr<RequestHandle>> golden, noise;
  for (int i = 0; i < 3; ++i)
    noise.push_back((*engine)->Submit(Unrelated(i, model->config().text.vocab_size)).value());
  for (const auto& c : cases) golden.push_back((*engine)->Submit(GreedyRequest(c)).value());
  for (const auto& c : cases) golden.push_back((*engine)->Submit(GreedyRequest(c)).value());
  for (size_t i = 0; i < golden.size(); ++i) {
    Completion r = golden[i]->Wait();
    EXPECT_EQ(r.finish_reason, FinishReason::kLength) << r.error;
    EXPECT_EQ(r.ids, cases[i % cases.size()].want) << cases[i % cases.size()].name;
  }
  for (auto& n : noise) {
    Completion r = n->Wait();
    EXPECT_EQ(r.finish_reason, FinishReason::kLength) << r.error;
  }
  EXPECT_EQ((*engine)->Stats().kv_blocks_used, 0);
}

INSTANTIATE_TEST_SUITE_P(Compositions, CudaEngineTest,
                         ::testing::Combine(::testing::Values("tiny", "tinyvocab"),
                                            ::testing::Values(Variant{512, 0, 64}, Variant{7, 0, 64},
                                                              Variant{64, 24, 3}, Variant{33, 0, 1},
                                                              Variant{512, 0, 64, 1})),
                         [](const auto& i) {
                           const Variant v = std::get<1>(i.param);
                           return std::get<0>(i.param) + "_b" + std::to_string(v.max_batch_tokens) + "_kv" +
                                  std::to_string(v.kv_blocks) + "_s" + std::to_string(v.max_seqs) +
                                  (v.max_patches > 0 ? "_p" + std::to_string(v.max_patches) : "");
                         });

// MinerU's block rules (presence and frequency penalties, no_repeat_ngram_size, a logit_bias)
// with greedy choice, through the GPU's candidate logits (kernels/cuda/logits_topk.h), in fp32:
// the same ids as the CPU engine, which samples whole rows. Graphs on and off (decode steps of
// several sequences, padded) give the same ids too.
class CudaEngineRulesTest : public CudaEngineTest {};

TEST_F(CudaEngineRulesTest, RulesThroughCandidatesMatchTheCpu) {
  for (const char* name : {"tiny", "tinyvocab"}) {
    SCOPED_TRACE(name);
    auto model = Qwen2VLModel::Load(FixturePath(name)).value();
    const int32_t vocab = static_cast<int32_t>(model->config().text.vocab_size);
    auto cases = LoadCases(name, model->config().image_token_id);
    std::vector<EngineRequest> reqs;
    for (const auto& c : cases) {
      EngineRequest r = GreedyRequest(c);
      r.max_new_tokens = 40;
      r.sampling.presence_penalty = 1.0f;
      r.sampling.frequency_penalty = 0.05f;
      r.sampling.no_repeat_ngram_size = 3;
      r.sampling.logit_bias = {{c.want[1], -2.0f}, {vocab - 1, 1.5f}};
      reqs.push_back(r);
    }
    auto run = [&](bool gpu, bool graphs) {
      EngineConfig cfg;
      cfg.threads = 2;
      cfg.kv_blocks = 512;
      cfg.device.device = gpu ? ComputeDevice::kCuda : ComputeDevice::kCpu;
      cfg.device.gpu_fp32 = true;
      cfg.device.gpu_memory = 0.5;
      cfg.device.gpu_graphs = graphs;
      auto engine = Engine::Create(*model, nullptr, cfg).value();
      std::vector<std::shared_ptr<RequestHandle>> hs;
      for (const EngineRequest& r : reqs) hs.push_back(engine->Submit(r).value());
      std::vector<std::vector<int32_t>> ids;
      for (auto& h : hs) ids.push_back(h->Wait().ids);
      return ids;
    };
    const auto cpu = run(false, false);
    EXPECT_EQ(run(true, true), cpu);
    EXPECT_EQ(run(true, false), cpu);
  }
}

// bf16 with the KV cache sized from the memory budget: every request completes, and the greedy
// goldens' first token (the prompt's argmax, far from a tie on these fixtures) is theirs.
class CudaEngineBf16Test : public CudaEngineTest {};

TEST_F(CudaEngineBf16Test, RequestsCompleteAndFirstTokensMatch) {
  auto model = Qwen2VLModel::Load(FixturePath("tinyvocab")).value();
  auto cases = LoadCases("tinyvocab", model->config().image_token_id);
  EngineConfig cfg;
  cfg.threads = 2;
  cfg.device.device = ComputeDevice::kCuda;
  cfg.device.gpu_memory = 3e9;  // bytes: the pool sized from a budget, not too large for the host's BlockPool
  auto engine = Engine::Create(*model, nullptr, cfg);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  EXPECT_GT((*engine)->Stats().kv_blocks_total, 0);
  std::vector<std::shared_ptr<RequestHandle>> handles;
  for (const auto& c : cases) handles.push_back((*engine)->Submit(GreedyRequest(c)).value());
  for (size_t i = 0; i < handles.size(); ++i) {
    Completion r = handles[i]->Wait();
    ASSERT_EQ(r.finish_reason, FinishReason::kLength) << r.error;
    ASSERT_EQ(r.ids.size(), 16u);
    EXPECT_EQ(r.ids[0], cases[i].want[0]) << cases[i].name;
  }
}

}  // namespace
}  // namespace mineru
