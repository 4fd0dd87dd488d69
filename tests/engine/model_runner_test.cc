// The model runner's vision passes (engine/model_runner.h) over the CPU backend: a step's images
// in passes of their own (max_patches_per_pass 1), handed to the backend together. A pass that
// fails (an error, or memory running out inside the encoder) fails only the sequence whose image
// it held; the others get the embeddings their images give alone; a failing health check after
// the passes fails them all and caches nothing.

#include <gtest/gtest.h>

#include <memory>
#include <new>
#include <string>
#include <vector>

#include "../util/files.h"
#include "base/thread_pool.h"
#include "engine/model_runner.h"
#include "engine/sequence.h"
#include "model/cpu_backend.h"

namespace mineru {
namespace {

enum class Fault { kNone, kError, kOutOfMemory };

// One image a pass; the pass numbered `fail_pass` (from 1) fails as `fault` says.
class FaultyPasses : public ModelBackend {
 public:
  FaultyPasses(std::unique_ptr<ModelBackend> inner, int fail_pass, Fault fault)
      : inner_(std::move(inner)), fail_pass_(fail_pass), fault_(fault) {}
  StatusOr<std::vector<float>> EncodeImages(std::vector<float>&& pixels,
                                            const std::vector<ImageGrid>& grids) override {
    EXPECT_EQ(grids.size(), 1u);
    if (++passes_ == fail_pass_ && fault_ == Fault::kError)
      return InvalidArgumentError("injected vision fault");
    if (passes_ == fail_pass_ && fault_ == Fault::kOutOfMemory) throw std::bad_alloc();
    return inner_->EncodeImages(std::move(pixels), grids);
  }
  void EncodeImagePasses(std::vector<ImagePass>* passes,
                         std::vector<StatusOr<std::vector<float>>>* out) override {
    batches.push_back(passes->size());
    ModelBackend::EncodeImagePasses(passes, out);
  }
  Status Forward(std::vector<float>*, const std::vector<BatchSegment>&,
                 const std::vector<int32_t>&) override {
    return UnimplementedError("not in this test");
  }
  Status ReadLogits(const std::vector<LogitsRequest>&, std::vector<RowLogits>*) override {
    return UnimplementedError("not in this test");
  }
  bool logits_on_device() const override { return false; }
  int64_t max_patches_per_pass() const override { return 1; }
  void ReleaseScratch() override {}
  std::string Describe() const override { return "faulty passes"; }

  std::vector<size_t> batches;  // passes per EncodeImagePasses call

 private:
  std::unique_ptr<ModelBackend> inner_;
  int passes_ = 0;
  const int fail_pass_;
  const Fault fault_;
};

class ModelRunnerVisionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = Qwen2VLModel::Load(testing::kFx + "/tiny");
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(m).value();
  }
  // Three sequences of one 4x4-patch image each (different pixels and hashes).
  std::vector<std::unique_ptr<Sequence>> Sequences() const {
    std::vector<std::unique_ptr<Sequence>> seqs;
    const int64_t pd = model_->config().vision.patch_dim();
    for (int i = 0; i < 3; ++i) {
      auto s = std::make_unique<Sequence>();
      ImageInput in;
      in.grid = {1, 4, 4};
      in.pixel_values.resize(static_cast<size_t>(16 * pd));
      for (size_t k = 0; k < in.pixel_values.size(); ++k)
        in.pixel_values[k] = static_cast<float>((k * 37 + i * 101) % 200) / 100.0f - 1.0f;
      s->inputs.push_back(std::move(in));
      s->image_hashes.push_back({static_cast<uint64_t>(i + 1), 7});
      seqs.push_back(std::move(s));
    }
    return seqs;
  }
  std::vector<float> Alone(const ImageInput& in) {
    auto out = model_->vision().Encode(in.pixel_values.data(), in.grid.num_patches(), {in.grid}, ctx_);
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    return out.ok() ? *out : std::vector<float>();
  }
  // Runs the three sequences through a runner whose pass `fail_pass` fails as `fault` says.
  void Run(int fail_pass, Fault fault, const Status& health, std::vector<std::string>* errors,
           std::vector<std::unique_ptr<Sequence>>* seqs, std::vector<std::vector<float>>* want,
           std::vector<size_t>* batches, size_t* cached) {  // cached: the image cache's bytes
    *seqs = Sequences();
    want->clear();
    for (const auto& s : *seqs) want->push_back(Alone(s->inputs[0]));
    auto backend = std::make_unique<FaultyPasses>(std::make_unique<CpuBackend>(*model_, &pool_, nullptr),
                                                  fail_pass, fault);
    FaultyPasses* faulty = backend.get();
    ModelRunner runner(*model_, std::move(backend), size_t{64} << 20);
    std::vector<Sequence*> ptrs;
    for (auto& s : *seqs) ptrs.push_back(s.get());
    runner.EncodeImages(
        ptrs, [&health] { return health; }, errors);
    *batches = faulty->batches;
    *cached = runner.image_cache().bytes();
  }

  std::unique_ptr<Qwen2VLModel> model_;
  ThreadPool pool_{2};
  kernels::KernelWorkspace ctx_{kernels::KernelConfig(), &pool_};
};

TEST_F(ModelRunnerVisionTest, AFailedPassFailsOnlyItsSequence) {
  size_t all_cached = 0;  // the cache's bytes for three images
  {
    std::vector<std::string> errors;
    std::vector<std::unique_ptr<Sequence>> seqs;
    std::vector<std::vector<float>> want;
    std::vector<size_t> batches;
    ASSERT_NO_FATAL_FAILURE(Run(0, Fault::kNone, Status::Ok(), &errors, &seqs, &want, &batches, &all_cached));
    EXPECT_EQ(errors, std::vector<std::string>(3, ""));
    for (int i = 0; i < 3; ++i) EXPECT_EQ(seqs[i]->embeds, want[i]) << i;
    ASSERT_GT(all_cached, 0u);
  }
  for (Fault fault : {Fault::kError, Fault::kOutOfMemory}) {
    for (int fail : {1, 2, 3}) {
      std::vector<std::string> errors;
      std::vector<std::unique_ptr<Sequence>> seqs;
      std::vector<std::vector<float>> want;
      std::vector<size_t> batches;
      size_t cached = 0;
      ASSERT_NO_FATAL_FAILURE(Run(fail, fault, Status::Ok(), &errors, &seqs, &want, &batches, &cached));
      const std::string what = (fault == Fault::kError ? "error" : "out of memory") +
                               std::string(" in pass ") + std::to_string(fail);
      EXPECT_EQ(batches, std::vector<size_t>{3}) << what;
      ASSERT_EQ(errors.size(), 3u);
      for (int i = 0; i < 3; ++i) {
        if (i + 1 == fail) {
          EXPECT_NE(
              errors[i].find(fault == Fault::kError ? "injected vision fault" : "encoding 16 image patches"),
              std::string::npos)
              << what << ": " << errors[i];
        } else {
          EXPECT_EQ(errors[i], "") << what;
          EXPECT_EQ(seqs[i]->embeds, want[i]) << what << ", sequence " << i;
        }
        EXPECT_TRUE(seqs[i]->inputs.empty()) << "pixels released";
      }
      EXPECT_EQ(cached, all_cached / 3 * 2) << what << ": the two images encoded are cached";
    }
  }
}

TEST_F(ModelRunnerVisionTest, AFailedHealthCheckFailsEveryPassAndCachesNothing) {
  std::vector<std::string> errors;
  std::vector<std::unique_ptr<Sequence>> seqs;
  std::vector<std::vector<float>> want;
  std::vector<size_t> batches;
  size_t cached = 0;
  ASSERT_NO_FATAL_FAILURE(Run(2, Fault::kError, UnavailableError("the weights changed"), &errors, &seqs,
                              &want, &batches, &cached));
  EXPECT_NE(errors[0].find("the weights changed"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("injected vision fault"), std::string::npos) << errors[1];  // its own reason
  EXPECT_NE(errors[2].find("the weights changed"), std::string::npos) << errors[2];
  EXPECT_EQ(cached, 0u);
}

}  // namespace
}  // namespace mineru
