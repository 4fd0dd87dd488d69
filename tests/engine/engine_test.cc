// The batching engine on the fixture models: golden greedy ids under any batch composition
// (concurrent goldens + unrelated requests, chunked prefill, a KV pool small enough to preempt),
// seeded sampling independent of the batch, cancellation, limits, streaming, prefix/image caches.

#include <gtest/gtest.h>

#include <thread>

#include "../model/golden_util.h"
#include "engine/engine.h"
#include "engine/image_cache.h"
#include "engine_test_util.h"
#include "image/decode.h"

namespace mineru {
namespace {

using testing::FixturePath;
using testing::Golden;
using testing::GoldenCase;
using testing::GreedyRequest;
using testing::LoadCases;
using testing::Unrelated;

struct Variant {
  int max_batch_tokens, kv_blocks, max_seqs;
};

class EngineGoldenTest : public ::testing::TestWithParam<std::tuple<std::string, Variant>> {};

TEST_P(EngineGoldenTest, GoldensReproduceInAnyBatchComposition) {
  const std::string model_name = std::get<0>(GetParam());
  const Variant v = std::get<1>(GetParam());
  auto model = Qwen2VLModel::Load(FixturePath(model_name)).value();
  const int32_t image_token = model->config().image_token_id;
  auto cases = LoadCases(model_name, image_token);
  EngineConfig cfg;
  cfg.threads = 2;
  cfg.max_batch_tokens = v.max_batch_tokens;
  cfg.kv_blocks = v.kv_blocks;
  cfg.max_seqs = v.max_seqs;
  auto engine = Engine::Create(*model, nullptr, cfg).value();
  // Seeded requests alone first: their outputs must not change when batched with others.
  std::vector<std::vector<int32_t>> alone;
  for (int i = 0; i < 3; ++i)
    alone.push_back(engine->Submit(Unrelated(i, model->config().text.vocab_size)).value()->Wait().ids);
  std::vector<std::shared_ptr<RequestHandle>> golden, noise;
  for (int i = 0; i < 3; ++i)
    noise.push_back(engine->Submit(Unrelated(i, model->config().text.vocab_size)).value());
  for (const auto& c : cases) golden.push_back(engine->Submit(GreedyRequest(c)).value());
  for (const auto& c : cases)
    golden.push_back(engine->Submit(GreedyRequest(c)).value());  // duplicates share prefixes
  for (size_t i = 0; i < golden.size(); ++i) {
    Completion r = golden[i]->Wait();
    EXPECT_EQ(r.finish_reason, FinishReason::kLength) << r.error;
    EXPECT_EQ(r.ids, cases[i % cases.size()].want) << cases[i % cases.size()].name;
  }
  for (int i = 0; i < 3; ++i) EXPECT_EQ(noise[i]->Wait().ids, alone[i]) << "seeded request " << i;
  EngineStats st = engine->Stats();
  EXPECT_EQ(st.kv_blocks_used, 0);  // every block returned
}

INSTANTIATE_TEST_SUITE_P(Compositions, EngineGoldenTest,
                         ::testing::Combine(::testing::Values("tiny", "tinyvocab"),
                                            ::testing::Values(Variant{512, 0, 64},  // everything at once
                                                              Variant{7, 0, 64},    // tiny chunks of prefill
                                                              Variant{64, 24,
                                                                      3},  // small KV pool: preemption
                                                              Variant{33, 0, 1})),  // one sequence at a time
                         [](const auto& i) {
                           const Variant v = std::get<1>(i.param);
                           return std::get<0>(i.param) + "_b" + std::to_string(v.max_batch_tokens) + "_kv" +
                                  std::to_string(v.kv_blocks) + "_s" + std::to_string(v.max_seqs);
                         });

// A half-precision KV cache through the engine (paged blocks, chunked prefill, prefix sharing,
// preemption): every request's greedy ids are the same alone and batched with the others under a
// pool small enough to preempt, and the first token (the prompt's prefill, read back from fp16
// blocks) is the reference's.
TEST(EngineFp16KvTest, BatchCompositionChangesNothing) {
  auto model = Qwen2VLModel::Load(FixturePath("tinyvocab")).value();
  auto cases = LoadCases("tinyvocab", model->config().image_token_id);
  EngineConfig cfg;
  cfg.threads = 2;
  cfg.kv_type = KvCacheType::kF16;
  auto alone_engine = Engine::Create(*model, nullptr, cfg).value();
  ASSERT_EQ(alone_engine->kv_type(), KvType::kF16);
  std::vector<std::vector<int32_t>> alone;
  for (const auto& c : cases) {
    alone.push_back(alone_engine->Submit(GreedyRequest(c)).value()->Wait().ids);
    ASSERT_FALSE(alone.back().empty());
    EXPECT_EQ(alone.back()[0], c.want[0]) << c.name;
  }
  cfg.max_batch_tokens = 33;
  cfg.kv_blocks = 24;
  cfg.max_seqs = 3;
  auto engine = Engine::Create(*model, nullptr, cfg).value();
  std::vector<std::shared_ptr<RequestHandle>> all;
  for (int i = 0; i < 3; ++i)
    all.push_back(engine->Submit(Unrelated(i, model->config().text.vocab_size)).value());
  std::vector<std::shared_ptr<RequestHandle>> golden;
  for (int round = 0; round < 2; ++round)
    for (const auto& c : cases) golden.push_back(engine->Submit(GreedyRequest(c)).value());
  for (size_t i = 0; i < golden.size(); ++i) EXPECT_EQ(golden[i]->Wait().ids, alone[i % cases.size()]) << i;
  for (auto& h : all) EXPECT_EQ(h->Wait().finish_reason, FinishReason::kLength);
  EXPECT_EQ(engine->Stats().kv_blocks_used, 0);
}

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = Qwen2VLModel::Load(FixturePath("tinyvocab")).value();
    tok_ = Tokenizer::LoadFromFile(FixturePath("tinyvocab/tokenizer.json")).value();
  }
  std::unique_ptr<Engine> Make(EngineConfig cfg = {}) {
    cfg.threads = 2;
    return Engine::Create(*model_, tok_.get(), cfg).value();
  }
  EngineRequest Chat(const std::string& text, bool image, int max_new = 24) {
    EngineRequest r;
    r.messages = SingleTurn(text, image ? 1 : 0);
    if (image) r.images.push_back(DecodeImageFile(FixturePath("image2.png")).value());
    r.max_new_tokens = max_new;
    r.ignore_eos = true;
    return r;
  }
  std::unique_ptr<Qwen2VLModel> model_;
  std::unique_ptr<Tokenizer> tok_;
};

// The KV cache type: fp32 for a bf16/fp32 model, fp16 for a quantized decoder, as configured when
// set; an fp16 block is half an fp32 one.
TEST_F(EngineTest, KvCacheTypeFollowsTheWeights) {
  EXPECT_EQ(Make()->kv_type(), KvType::kF32);
  auto q8 = Qwen2VLModel::Load(FixturePath("tinyvocab"), "q8").value();
  EngineConfig cfg;
  cfg.threads = 2;
  auto auto_q8 = Engine::Create(*q8, tok_.get(), cfg).value();
  EXPECT_EQ(auto_q8->kv_type(), KvType::kF16);
  cfg.kv_type = KvCacheType::kF32;
  EXPECT_EQ(Engine::Create(*q8, tok_.get(), cfg).value()->kv_type(), KvType::kF32);
  cfg.kv_type = KvCacheType::kF16;
  EXPECT_EQ(Engine::Create(*model_, tok_.get(), cfg).value()->kv_type(), KvType::kF16);
  // The quantized model with its fp16 cache answers.
  Completion r = auto_q8->Submit(Chat("Describe this page.", true)).value()->Wait();
  EXPECT_EQ(r.error, "");
  EXPECT_FALSE(r.ids.empty());
}

TEST_F(EngineTest, StreamingTextEqualsFinalText) {
  auto e = Make();
  auto h = e->Submit(Chat("Describe the picture.", true, 40)).value();
  std::string streamed;
  std::vector<int32_t> ids;
  while (h->Next(&streamed, &ids)) {
  }
  Completion c = h->Wait();
  EXPECT_EQ(streamed, c.text);
  EXPECT_EQ(ids, c.ids);
  EXPECT_EQ(c.ids.size(), 40u);
  EXPECT_EQ(tok_->Decode(c.ids).value(), c.text);
}

TEST_F(EngineTest, CancellationStopsARequest) {
  auto e = Make();
  auto h = e->Submit(Chat("Go on forever.", false, 5000)).value();
  std::vector<int32_t> ids;
  ASSERT_TRUE(h->Next(nullptr, &ids));  // at least one token arrived
  h->Cancel();
  Completion c = h->Wait();
  EXPECT_EQ(c.finish_reason, FinishReason::kCancelled);
  EXPECT_LT(c.ids.size(), 5000u);
  // The engine keeps serving.
  EXPECT_EQ(e->Submit(Chat("Hi", false, 3)).value()->Wait().ids.size(), 3u);
  EXPECT_EQ(e->Stats().kv_blocks_used, 0);
}

TEST_F(EngineTest, LimitsAreErrorsNotCrashes) {
  EngineConfig cfg;
  cfg.max_prompt_tokens = 30;
  cfg.max_new_tokens = 100;
  cfg.kv_blocks = 8;  // 128 tokens
  cfg.max_queued = 2;
  auto e = Make(cfg);
  EXPECT_EQ(e->Submit(Chat(std::string(200, 'a'), false)).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(e->Submit(Chat("hi", false, 101)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(e->Submit(Chat("hi", false, 0)).status().code(), StatusCode::kInvalidArgument);
  EngineRequest bad;
  bad.prompt_ids = {1, 999999};
  EXPECT_FALSE(e->Submit(bad).ok());
  EngineRequest img_without;
  img_without.prompt_ids = {1, model_->config().image_token_id, 2};
  EXPECT_FALSE(e->Submit(img_without).ok());
  // Queue: two requests in flight that cannot finish on their own meanwhile (a million tokens,
  // eos ignored), the third is refused.
  EngineConfig qcfg;
  qcfg.max_new_tokens = 1 << 20;
  qcfg.max_queued = 2;
  auto q = Make(qcfg);
  auto a = q->Submit(Chat("x", false, 1 << 20)).value();
  auto b = q->Submit(Chat("y", false, 1 << 20)).value();
  auto c = q->Submit(Chat("z", false, 5));
  EXPECT_EQ(c.status().code(), StatusCode::kBusy);
  a->Cancel();
  b->Cancel();
  // Bounded waits: a cancel that did not take would otherwise wait out a million tokens.
  for (auto* h : {a.get(), b.get()}) {
    Completion done;
    ASSERT_TRUE(h->WaitFor(60, &done)) << "a cancelled request did not finish";
    EXPECT_EQ(done.finish_reason, FinishReason::kCancelled);
  }
  // Once they are done, there is room again.
  auto d = q->Submit(Chat("z", false, 5));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  Completion done;
  ASSERT_TRUE(d.value()->WaitFor(60, &done));
  EXPECT_EQ(done.ids.size(), 5u);
}

TEST_F(EngineTest, FollowUpTurnReusesImageAndPrefix) {
  auto e = Make();
  Completion first = e->Submit(Chat("Extract all text on this page.", true, 20)).value()->Wait();
  EXPECT_FALSE(first.image_cache_hit);
  // The follow-up conversation: first turn, its answer, a new question.
  EngineRequest second;
  ChatMessage u1{"user",
                 {{ChatPart::kImage, "", 0}, {ChatPart::kText, "Extract all text on this page.", -1}}};
  ChatMessage a1{"assistant", {{ChatPart::kText, first.text, -1}}};
  ChatMessage u2{"user", {{ChatPart::kText, "Summarize the page in three sentences.", -1}}};
  second.messages = {{"system", {{ChatPart::kText, kDefaultSystemPrompt, -1}}}, u1, a1, u2};
  second.images.push_back(DecodeImageFile(FixturePath("image2.png")).value());
  second.max_new_tokens = 10;
  second.ignore_eos = true;
  Completion c2 = e->Submit(second).value()->Wait();
  EXPECT_TRUE(c2.image_cache_hit);
  EXPECT_GT(c2.cached_prompt_tokens, 16);
  // Same answer as an engine with no caches.
  EngineConfig nocache;
  nocache.prefix_caching = false;
  nocache.image_cache_mb = 0;
  auto fresh = Make(nocache);
  Completion ref = fresh->Submit(second).value()->Wait();
  EXPECT_EQ(ref.cached_prompt_tokens, 0);
  EXPECT_FALSE(ref.image_cache_hit);
  EXPECT_EQ(c2.ids, ref.ids);
}

TEST_F(EngineTest, OnePixelDifferentImageNeverSharesCacheEntries) {
  auto e = Make();
  RgbImage a = DecodeImageFile(FixturePath("image2.png")).value();
  RgbImage b = a;
  b.pixels[12345] ^= 1;
  EXPECT_FALSE(HashImage(a, model_->image_config()) == HashImage(b, model_->image_config()));
  EngineRequest ra = Chat("What is this?", true, 8);
  ra.images = {a};
  EngineRequest rb = ra;
  rb.images = {b};
  Completion ca = e->Submit(ra).value()->Wait();
  Completion cb = e->Submit(rb).value()->Wait();
  EXPECT_FALSE(cb.image_cache_hit);
  // Only the text before the image may come from the prefix cache.
  EXPECT_LT(cb.cached_prompt_tokens, 32);
  // And a fresh engine gives b the same answer.
  auto fresh = Make();
  EXPECT_EQ(fresh->Submit(rb).value()->Wait().ids, cb.ids);
}

TEST_F(EngineTest, ManyConcurrentClientsFromManyThreads) {
  auto e = Make();
  std::vector<std::thread> threads;
  std::vector<std::vector<int32_t>> results(8);
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      results[i] = e->Submit(Chat("Say something " + std::to_string(i % 2), false, 6)).value()->Wait().ids;
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 2; i < 8; ++i) EXPECT_EQ(results[i], results[i % 2]);
  EXPECT_EQ(e->Stats().kv_blocks_used, 0);
}

// Sampling from candidate logits (the GPU backend's way: engine/sampler.h, CandidateQuery) through
// the whole engine on the CPU: the goldens' greedy ids, and requests under every sampling rule
// (penalties, logit_bias, n-gram bans, top_k / top_p draws, and rules that need the whole row)
// get the same ids as the engine that samples whole rows, batched together.
TEST(EngineCandidateTest, CandidateSamplingEqualsWholeRows) {
  for (const char* name : {"tiny", "tinyvocab"}) {
    auto model = Qwen2VLModel::Load(FixturePath(name)).value();
    const int32_t vocab = static_cast<int32_t>(model->config().text.vocab_size);
    const auto cases = LoadCases(name, model->config().image_token_id);
    EngineConfig cfg;
    cfg.threads = 2;
    cfg.max_batch_tokens = 64;
    auto rows = Engine::Create(*model, nullptr, cfg).value();
    cfg.sample_from_candidates = true;
    auto cands = Engine::Create(*model, nullptr, cfg).value();
    std::vector<EngineRequest> reqs;
    for (const auto& c : cases) reqs.push_back(GreedyRequest(c));
    for (int i = 0; i < 8; ++i) {
      EngineRequest r = Unrelated(i % 3, vocab);
      r.max_new_tokens = 24;
      r.sampling.temperature = i % 4 == 0 ? 0.0f : 0.9f;
      r.sampling.top_k = std::vector<int>{1, 3, 40, 0, 20, 7, 2, 0}[i];
      r.sampling.top_p = i % 3 == 0 ? 0.8f : 1.0f;
      r.sampling.presence_penalty = i % 2 ? 1.0f : 0.0f;
      r.sampling.frequency_penalty = i % 3 ? 0.05f : 0.0f;
      r.sampling.repetition_penalty = i % 4 == 1 ? 1.3f : 1.0f;
      r.sampling.no_repeat_ngram_size = std::vector<int>{0, 2, 100, 3, 1, 0, 2, 3}[i];
      if (i % 3 == 2) r.sampling.logit_bias = {{5, 4.0f}, {vocab - 1, -100.0f}};
      r.sampling.seed = 77 + i;
      reqs.push_back(r);
    }
    std::vector<std::shared_ptr<RequestHandle>> a, b;
    for (const EngineRequest& r : reqs) {
      a.push_back(rows->Submit(r).value());
      b.push_back(cands->Submit(r).value());
    }
    for (size_t i = 0; i < reqs.size(); ++i) {
      const Completion x = a[i]->Wait(), y = b[i]->Wait();
      EXPECT_EQ(y.finish_reason, FinishReason::kLength) << y.error;
      EXPECT_EQ(y.ids, x.ids) << name << " request " << i;
      if (i < cases.size()) {
        EXPECT_EQ(y.ids, cases[i].want) << name << " " << cases[i].name;
      }
    }
  }
}

// --device cuda where it cannot run is a clear error from Create, never a crash or a silent CPU
// run: Unimplemented in a build without the CUDA backend, Unavailable without a usable GPU (CI);
// on a GPU machine the engine runs and says where.
TEST(EngineDeviceTest, CudaIsAClearErrorWhereItCannotRun) {
  auto model = Qwen2VLModel::Load(FixturePath("tiny")).value();
  EngineConfig cfg;
  cfg.threads = 1;
  cfg.device.device = ComputeDevice::kCuda;
  auto engine = Engine::Create(*model, nullptr, cfg);
  if (engine.ok()) {
    EXPECT_NE((*engine)->device_description().find("cuda:0"), std::string::npos);
  } else {
    EXPECT_TRUE(engine.status().code() == StatusCode::kUnimplemented ||
                engine.status().code() == StatusCode::kUnavailable)
        << engine.status().ToString();
  }
  cfg.device.device = ComputeDevice::kCpu;
  auto cpu = Engine::Create(*model, nullptr, cfg);
  ASSERT_TRUE(cpu.ok()) << cpu.status().ToString();
  EXPECT_EQ((*cpu)->device_description().rfind("cpu (", 0), 0u) << (*cpu)->device_description();
}

}  // namespace
}  // namespace mineru
