// Fault tests of the engine (issue #7), in process: the weight file truncated under a running
// request (the mapped pages are lost: SIGBUS, absorbed by base/mapped_file) finishes that request
// with finish_reason "error" and a clear reason, refuses new ones, and leaves the process alive; a
// weight file already truncated at load is a one-line error. A backend that fails a step (a GPU
// fault, injected through EngineConfig::wrap_backend) fails that step's requests and degrades the
// engine for good; one that runs out of memory fails only that step's requests.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "../util/files.h"
#include "base/mapped_file.h"
#include "engine/engine.h"
#include "engine_test_util.h"
#include "model/backend.h"

namespace mineru {
namespace {

using testing::CopyModel;
using testing::TempDir;

EngineRequest LongRequest() {
  EngineRequest r;
  for (int k = 0; k < 24; ++k) r.prompt_ids.push_back(100 + k);
  r.max_new_tokens = 16000;  // far longer than the test runs
  r.ignore_eos = true;
  return r;
}

TEST(EngineFaultTest, WeightsTruncatedWhileRunning) {
  const std::string dir = CopyModel("tiny", TempDir("engine_fault_running"));
  const std::string weights = dir + "/model.safetensors";
  auto model = Qwen2VLModel::Load(dir);  // as stored: the matrices stay in the mapping
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EngineConfig cfg;
  cfg.threads = 2;
  auto engine = Engine::Create(**model, nullptr, cfg);
  ASSERT_TRUE(engine.ok());
  ASSERT_TRUE((*engine)->Health().ok());

  auto h = (*engine)->Submit(LongRequest());
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  std::vector<int32_t> ids;
  ASSERT_TRUE((*h)->Next(nullptr, &ids));  // generating
  ASSERT_FALSE(ids.empty());
  const uint64_t faults = MappedFileFaultCount();
  ASSERT_EQ(::truncate(weights.c_str(), 0), 0);

  Completion c;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool done = false;
  while (!done && std::chrono::steady_clock::now() < deadline) done = (*h)->WaitFor(0.5, &c);
  ASSERT_TRUE(done) << "the request did not finish after its weights were truncated";
  EXPECT_EQ(c.finish_reason, FinishReason::kError);
  EXPECT_LT(c.ids.size(), 16000u);
  for (const std::string& want : std::vector<std::string>{
           "model file " + weights, "changed on disk while mapped", "restart or reload"}) {
    EXPECT_NE(c.error.find(want), std::string::npos) << c.error;
  }

  // New requests are refused with the same reason; the engine stays degraded.
  auto again = (*engine)->Submit(LongRequest());
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(again.status().message().find("changed on disk while mapped"), std::string::npos);
  Status health = (*engine)->Health();
  EXPECT_EQ(health.code(), StatusCode::kUnavailable);
  EXPECT_NE(health.message().find("size "), std::string::npos) << health.message();

  // The lost pages read as zeros instead of ending the process (the engine's step touched them,
  // or this read does).
  const WeightView& emb = (*model)->weights().text.embed_tokens;
  const size_t bytes = static_cast<size_t>(emb.rows * emb.cols) * DTypeSize(emb.dtype);
  EXPECT_EQ(*(static_cast<const volatile uint8_t*>(emb.data) + bytes - 1), 0);
  EXPECT_GT(MappedFileFaultCount(), faults);
  engine->reset();
}

TEST(EngineFaultTest, WeightsRewrittenInPlaceRefuseNewRequests) {
  const std::string dir = CopyModel("tiny", TempDir("engine_fault_rewritten"));
  auto model = Qwen2VLModel::Load(dir, "q8");  // quantized copies: no fault, only the fstat check
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EngineConfig cfg;
  cfg.threads = 1;
  auto engine = Engine::Create(**model, nullptr, cfg);
  ASSERT_TRUE(engine.ok());
  EngineRequest small = LongRequest();
  small.max_new_tokens = 2;
  auto ok = (*engine)->Submit(small);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ((*ok)->Wait().finish_reason, FinishReason::kLength);
  // Same size, new contents and modification time.
  const std::string weights = dir + "/model.safetensors";
  std::string bytes = ReadFileToString(weights).value();
  bytes[bytes.size() - 1] ^= 1;
  ASSERT_TRUE(WriteStringToFile(weights, bytes).ok());
  struct timespec times[2] = {{0, UTIME_OMIT}, {12345, 0}};  // distinct even with coarse timestamps
  ASSERT_EQ(::utimensat(AT_FDCWD, weights.c_str(), times, 0), 0);
  auto refused = (*engine)->Submit(small);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("modified in place"), std::string::npos)
      << refused.status().message();
}

TEST(EngineFaultTest, WeightsTruncatedBeforeLoadAreAOneLineError) {
  const std::string dir = CopyModel("tiny", TempDir("engine_fault_atload"));
  const std::string weights = dir + "/model.safetensors";
  struct stat st {};
  ASSERT_EQ(::stat(weights.c_str(), &st), 0);
  ASSERT_EQ(::truncate(weights.c_str(), st.st_size / 2), 0);
  auto model = Qwen2VLModel::Load(dir);
  ASSERT_FALSE(model.ok());
  const std::string m = model.status().ToString();
  EXPECT_EQ(model.status().code(), StatusCode::kDataLoss) << m;
  EXPECT_NE(m.find(weights + ": truncated"), std::string::npos) << m;
  EXPECT_NE(m.find("the file has " + std::to_string(st.st_size / 2)), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

// Where a step fails: the pass itself, or the reading of its logits (a GPU reports a fault inside
// the pass there, when it waits for it).
enum class FailIn { kForward, kReadLogits };

// Passes everything to the real backend, except that call number `fail_at` (counting from 1) of
// Forward or ReadLogits fails with `code` and does nothing.
class FailingBackend : public ModelBackend {
 public:
  FailingBackend(std::unique_ptr<ModelBackend> inner, int fail_at, StatusCode code, FailIn where)
      : inner_(std::move(inner)), fail_at_(fail_at), code_(code), where_(where) {}
  StatusOr<std::vector<float>> EncodeImages(std::vector<float>&& pixels,
                                            const std::vector<ImageGrid>& grids) override {
    return inner_->EncodeImages(std::move(pixels), grids);
  }
  Status Forward(std::vector<float>* embeds, const std::vector<BatchSegment>& segments,
                 const std::vector<int32_t>& rows) override {
    if (where_ == FailIn::kForward && ++calls_ == fail_at_) return Injected();
    return inner_->Forward(embeds, segments, rows);
  }
  Status ReadLogits(const std::vector<LogitsRequest>& requests, std::vector<RowLogits>* out) override {
    if (where_ == FailIn::kReadLogits && ++calls_ == fail_at_) return Injected();
    return inner_->ReadLogits(requests, out);
  }
  bool logits_on_device() const override { return inner_->logits_on_device(); }
  int64_t max_patches_per_pass() const override { return inner_->max_patches_per_pass(); }
  void ReleaseScratch() override { inner_->ReleaseScratch(); }
  std::string Describe() const override { return "failing " + inner_->Describe(); }

 private:
  Status Injected() const { return Status(code_, "injected fault in step " + std::to_string(calls_)); }

  std::unique_ptr<ModelBackend> inner_;
  int calls_ = 0;
  const int fail_at_;
  const StatusCode code_;
  const FailIn where_;
};

EngineRequest ShortRequest(int i) {
  EngineRequest r;
  for (int k = 0; k < 6; ++k) r.prompt_ids.push_back(100 + 7 * i + k);
  r.max_new_tokens = 8;
  r.ignore_eos = true;
  return r;
}

std::unique_ptr<Engine> EngineFailingAt(const Qwen2VLModel& model, int step, StatusCode code,
                                        FailIn where = FailIn::kForward) {
  EngineConfig cfg;
  cfg.threads = 2;
  cfg.wrap_backend = [step, code,
                      where](std::unique_ptr<ModelBackend> inner) -> std::unique_ptr<ModelBackend> {
    return std::make_unique<FailingBackend>(std::move(inner), step, code, where);
  };
  auto engine = Engine::Create(model, nullptr, cfg);
  EXPECT_TRUE(engine.ok()) << engine.status().ToString();
  return engine.ok() ? std::move(engine).value() : nullptr;
}

// A device fault (Internal; Unavailable alike): the requests of that step end in error, naming it;
// the engine is degraded (new requests refused with Unavailable and the reason), and the process
// goes on.
class EngineStepFaultTest : public ::testing::TestWithParam<FailIn> {};

TEST_P(EngineStepFaultTest, ABackendFaultDegradesTheEngine) {
  auto model = Qwen2VLModel::Load(testing::kFx + "/tiny");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto engine = EngineFailingAt(**model, 3, StatusCode::kInternal, GetParam());
  ASSERT_NE(engine, nullptr);
  auto a = engine->Submit(ShortRequest(0));
  ASSERT_TRUE(a.ok());
  const Completion c = (*a)->Wait();
  EXPECT_EQ(c.finish_reason, FinishReason::kError);
  EXPECT_NE(c.error.find("injected fault"), std::string::npos) << c.error;
  const Status h = engine->Health();
  EXPECT_EQ(h.code(), StatusCode::kUnavailable);
  EXPECT_NE(h.message().find("the model's device failed"), std::string::npos) << h.ToString();
  auto b = engine->Submit(ShortRequest(1));
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kUnavailable);
}

// Memory running out in a step, or a shape a library refused, fails that step's requests only:
// the engine stays healthy and the next request completes.
TEST_P(EngineStepFaultTest, ABackendOutOfMemoryOrRefusalFailsOnlyItsStep) {
  auto model = Qwen2VLModel::Load(testing::kFx + "/tiny");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  for (StatusCode code :
       {StatusCode::kOutOfMemory, StatusCode::kInvalidArgument, StatusCode::kUnimplemented}) {
    auto engine = EngineFailingAt(**model, 2, code, GetParam());
    ASSERT_NE(engine, nullptr);
    const Completion first = engine->Submit(ShortRequest(0)).value()->Wait();
    EXPECT_EQ(first.finish_reason, FinishReason::kError);
    EXPECT_TRUE(engine->Health().ok()) << engine->Health().ToString();
    const Completion second = engine->Submit(ShortRequest(1)).value()->Wait();
    EXPECT_EQ(second.finish_reason, FinishReason::kLength) << second.error;
    EXPECT_EQ(second.ids.size(), 8u);
  }
}

INSTANTIATE_TEST_SUITE_P(Where, EngineStepFaultTest, ::testing::Values(FailIn::kForward, FailIn::kReadLogits),
                         [](const auto& i) {
                           return i.param == FailIn::kForward ? "Forward" : "ReadLogits";
                         });

// One image a vision pass (max_patches_per_pass 1), and pass number `fail_pass` over the
// engine's life (counting from 1) fails with InvalidArgument; records how many passes each
// EncodeImagePasses call brought (the runner hands a step's passes over together).
class PassFailingBackend : public ModelBackend {
 public:
  PassFailingBackend(std::unique_ptr<ModelBackend> inner, int fail_pass, std::vector<size_t>* batches)
      : inner_(std::move(inner)), fail_pass_(fail_pass), batches_(batches) {}
  StatusOr<std::vector<float>> EncodeImages(std::vector<float>&& pixels,
                                            const std::vector<ImageGrid>& grids) override {
    EXPECT_EQ(grids.size(), 1u) << "one image a pass";
    if (++passes_ == fail_pass_) return InvalidArgumentError("injected vision fault");
    return inner_->EncodeImages(std::move(pixels), grids);
  }
  void EncodeImagePasses(std::vector<ImagePass>* passes,
                         std::vector<StatusOr<std::vector<float>>>* out) override {
    batches_->push_back(passes->size());
    ModelBackend::EncodeImagePasses(passes, out);
  }
  Status Forward(std::vector<float>* embeds, const std::vector<BatchSegment>& segments,
                 const std::vector<int32_t>& rows) override {
    return inner_->Forward(embeds, segments, rows);
  }
  Status ReadLogits(const std::vector<LogitsRequest>& requests, std::vector<RowLogits>* out) override {
    return inner_->ReadLogits(requests, out);
  }
  bool logits_on_device() const override { return inner_->logits_on_device(); }
  int64_t max_patches_per_pass() const override { return 1; }
  void ReleaseScratch() override { inner_->ReleaseScratch(); }
  std::string Describe() const override { return "pass-failing " + inner_->Describe(); }

 private:
  std::unique_ptr<ModelBackend> inner_;
  int passes_ = 0;
  const int fail_pass_;
  std::vector<size_t>* batches_;
};

// Images in passes of their own, handed to the backend together: a failed pass fails only the
// request whose image it held (the engine stays healthy); the others, and a text-only request,
// give the goldens' ids.
TEST(EngineVisionPassTest, AFailedPassFailsOnlyItsRequest) {
  auto model = Qwen2VLModel::Load(testing::kFx + "/tiny");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const auto cases = testing::LoadCases("tiny", (*model)->config().image_token_id);
  ASSERT_EQ(cases[0].name, "one_image");
  ASSERT_EQ(cases[1].name, "two_images");
  std::vector<size_t> batches;
  EngineConfig cfg;
  cfg.threads = 2;
  // Passes in submission order: one_image's image (1), two_images' two (2 and 3).
  cfg.wrap_backend = [&batches](std::unique_ptr<ModelBackend> inner) -> std::unique_ptr<ModelBackend> {
    return std::make_unique<PassFailingBackend>(std::move(inner), 3, &batches);
  };
  auto engine = Engine::Create(**model, nullptr, cfg);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  std::vector<Completion> done;
  for (const auto& c : cases) done.push_back((*engine)->Submit(testing::GreedyRequest(c)).value()->Wait());
  for (size_t i = 0; i < cases.size(); ++i) {
    if (cases[i].name == "two_images") {
      EXPECT_EQ(done[i].finish_reason, FinishReason::kError);
      EXPECT_NE(done[i].error.find("injected vision fault"), std::string::npos) << done[i].error;
    } else {
      EXPECT_EQ(done[i].finish_reason, FinishReason::kLength) << cases[i].name << ": " << done[i].error;
      EXPECT_EQ(done[i].ids, cases[i].want) << cases[i].name;
    }
  }
  EXPECT_TRUE((*engine)->Health().ok()) << (*engine)->Health().ToString();
  // two_images' passes came together (one step's misses), after one_image's alone.
  EXPECT_EQ(batches, (std::vector<size_t>{1, 2}));
}

}  // namespace
}  // namespace mineru
