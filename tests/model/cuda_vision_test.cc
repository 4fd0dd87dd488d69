// The CUDA ViT (model/cuda/vision_encoder_cuda.h) against the Hugging Face goldens and against the
// CPU encoder, its twin: in fp32 it must give the goldens' merger output within the CPU golden
// tests' tolerance; in bf16 every output row within cosine 0.999 of the CPU's fp32 rows (mean and
// worst, the bar); images packed in one pass come out as they do alone.
//
// Tests that need a device skip, saying why, where there is none (CPU machines, CI);
// scripts/gpu_check.sh runs them on a GPU and fails if any skips there. The argument tests run
// everywhere.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../util/cuda_skip.h"
#include "golden_util.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/device.h"
#include "model/cuda/vision_encoder_cuda.h"
#include "model/qwen2vl.h"

namespace mineru {
namespace {

using testing::Cosines;
using testing::ExpectClose;
using testing::FixturePath;
using testing::Golden;
using testing::RowCosines;
namespace cu = kernels::cuda;

std::vector<ImageGrid> GoldenGrids(const Golden& golden) {
  std::vector<ImageGrid> grids;
  const std::vector<int64_t> thw = golden.I64("image_grid_thw");
  for (size_t i = 0; i + 2 < thw.size(); i += 3) grids.push_back({thw[i], thw[i + 1], thw[i + 2]});
  return grids;
}

// Deterministic pixel values in [-1, 1) for `patches` rows.
std::vector<float> Pixels(int64_t patches, int64_t patch_dim, uint32_t seed) {
  std::vector<float> v(static_cast<size_t>(patches * patch_dim));
  for (float& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<float>(seed >> 8) / static_cast<float>(1u << 24) * 2.0f - 1.0f;
  }
  return v;
}

// The base of the tests that need a device: skipped, with the reason, where there is none usable.
class CudaVisionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = testing::CudaSkipReason(); !why.empty()) GTEST_SKIP() << why;
  }

  // The fixture model and its CUDA encoder in precision p (mlp_chunk_rows as given).
  void Load(const std::string& model, CudaPrecision p, int64_t mlp_chunk_rows = 8192,
            cu::VarlenKernel attention = cu::VarlenKernel::kAuto) {
    auto m = Qwen2VLModel::Load(FixturePath(model), ModelLoadOptions());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(m).value();
    CudaVisionOptions o;
    o.precision = p;
    o.mlp_chunk_rows = mlp_chunk_rows;
    o.attention = attention;
    auto e = CudaVisionEncoder::Create(model_->config().vision, model_->weights().vision,
                                       model_->kernel_config(), o);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    gpu_ = std::move(e).value();
  }

  std::vector<float> Cpu(const std::vector<float>& pixels, const std::vector<ImageGrid>& grids) {
    const int64_t P = static_cast<int64_t>(pixels.size()) / model_->config().vision.patch_dim();
    auto out = model_->vision().Encode(pixels.data(), P, grids, ctx_);
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    return out.ok() ? *out : std::vector<float>();
  }
  std::vector<float> Gpu(const std::vector<float>& pixels, const std::vector<ImageGrid>& grids,
                         OpProfile* profile = nullptr) {
    const int64_t P = static_cast<int64_t>(pixels.size()) / model_->config().vision.patch_dim();
    auto out = gpu_->Encode(pixels.data(), P, grids, profile);
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    return out.ok() ? *out : std::vector<float>();
  }
  // The loaded encoder on a model's golden case: cosine >= 0.999 per row (mean and worst) against
  // the CPU's fp32 output.
  void ExpectCosineOfTheCpu(const char* model, const char* name) {
    const Golden golden(model, name);
    const std::vector<float> pixels = golden.F32("pixel_values");
    const std::vector<ImageGrid> grids = GoldenGrids(golden);
    const std::vector<float> want = Cpu(pixels, grids), got = Gpu(pixels, grids);
    ASSERT_EQ(got.size(), want.size());
    const Cosines cos = RowCosines(got, want, model_->config().vision.out_hidden_size);
    EXPECT_GE(cos.mean, 0.999);
    EXPECT_GE(cos.worst, 0.999);
  }

  std::unique_ptr<Qwen2VLModel> model_;
  std::unique_ptr<CudaVisionEncoder> gpu_;
  ThreadPool pool_{2};
  kernels::KernelWorkspace ctx_{kernels::KernelConfig(), &pool_};
};

struct GoldenCase {
  const char* model;
  const char* name;
};
const GoldenCase kGoldenCases[] = {
    {"tiny", "one_image"}, {"tiny", "two_images"}, {"tinyvocab", "one_image"}, {"tinyvocab", "two_images"}};

// fp32: the goldens' merger output, at the CPU golden test's tolerance.
TEST_F(CudaVisionTest, Fp32MatchesTheGoldens) {
  for (const GoldenCase& c : kGoldenCases) {
    SCOPED_TRACE(std::string(c.model) + "/" + c.name);
    ASSERT_NO_FATAL_FAILURE(Load(c.model, CudaPrecision::kF32));
    const Golden golden(c.model, c.name);
    const std::vector<float> got = Gpu(golden.F32("pixel_values"), GoldenGrids(golden));
    ExpectClose(got, golden.F32("act.vision.merger"), 1e-4f, 1e-4f, "merger");
  }
}

// bf16: cosine >= 0.999 per row (mean and worst) against the CPU's fp32 output.
TEST_F(CudaVisionTest, Bf16StaysWithinCosineOfTheCpu) {
  for (const GoldenCase& c : kGoldenCases) {
    SCOPED_TRACE(std::string(c.model) + "/" + c.name);
    ASSERT_NO_FATAL_FAILURE(Load(c.model, CudaPrecision::kBf16));
    ASSERT_NO_FATAL_FAILURE(ExpectCosineOfTheCpu(c.model, c.name));
  }
}

// Each attention kernel form through the whole encoder (--gpu-attention): the fixtures' heads of 16
// take every form.
TEST_F(CudaVisionTest, EveryAttentionFormStaysWithinCosineOfTheCpu) {
  const GoldenCase& c = kGoldenCases[0];
  for (cu::VarlenKernel k : {cu::VarlenKernel::kTensorCoreMma, cu::VarlenKernel::kTensorCoreMmaWide,
                             cu::VarlenKernel::kTensorCoreWmma, cu::VarlenKernel::kSimt}) {
    SCOPED_TRACE(std::string(c.model) + "/" + c.name + " " + cu::VarlenKernelName(k));
    ASSERT_NO_FATAL_FAILURE(Load(c.model, CudaPrecision::kBf16, 8192, k));
    ASSERT_NO_FATAL_FAILURE(ExpectCosineOfTheCpu(c.model, c.name));
  }
}

// Many images of awkward grids in one pass (one of two frames, one larger than an MLP chunk of 500
// rows): the CPU's output for the same pass in fp32, and each image alone gives its own rows.
TEST_F(CudaVisionTest, PackedImagesMatchTheCpuAndThemselvesAlone) {
  ASSERT_NO_FATAL_FAILURE(Load("tiny", CudaPrecision::kF32, 500));
  const int64_t pd = model_->config().vision.patch_dim(), H = model_->config().vision.out_hidden_size;
  const std::vector<ImageGrid> grids = {{1, 2, 2}, {1, 4, 6}, {2, 6, 4}, {1, 34, 22}, {1, 2, 30}};
  int64_t P = 0;
  for (const ImageGrid& g : grids) P += g.num_patches();
  const std::vector<float> pixels = Pixels(P, pd, 11);
  const std::vector<float> packed = Gpu(pixels, grids);
  const std::vector<float> cpu = Cpu(pixels, grids);
  ASSERT_EQ(packed.size(), static_cast<size_t>(P / 4 * H));  // the loop below indexes into it
  ExpectClose(packed, cpu, 1e-4f, 1e-4f, "packed pass vs CPU");
  int64_t row = 0, out_row = 0;
  for (const ImageGrid& g : grids) {
    const std::vector<float> one(pixels.begin() + row * pd, pixels.begin() + (row + g.num_patches()) * pd);
    const std::vector<float> alone = Gpu(one, {g});
    const int64_t n = g.num_patches() / 4;
    ASSERT_EQ(static_cast<int64_t>(alone.size()), n * H);
    const std::vector<float> part(packed.begin() + out_row * H, packed.begin() + (out_row + n) * H);
    ExpectClose(alone, part, 1e-5f, 1e-4f, "image alone vs in the pass");
    row += g.num_patches();
    out_row += n;
  }
}

// Submit/Collect overlap consecutive passes (one pass's inputs go up while the one before
// computes): the same output, bit for bit, as Encode of each pass alone, with passes growing (the
// shared activations are regrown while a pass is queued) and each host input overwritten as soon
// as Submit returns. At most kSlots passes are outstanding; a ticket is collected once.
TEST_F(CudaVisionTest, OverlappedPassesMatchEncodeBitForBit) {
  for (CudaPrecision p : {CudaPrecision::kBf16, CudaPrecision::kF32}) {
    ASSERT_NO_FATAL_FAILURE(Load("tiny", p, 500));
    const int64_t pd = model_->config().vision.patch_dim();
    const std::vector<std::vector<ImageGrid>> passes = {
        {{1, 2, 2}}, {{1, 4, 6}, {1, 2, 2}}, {{1, 34, 22}}, {{2, 6, 4}, {1, 2, 30}}, {{1, 4, 4}}};
    std::vector<std::vector<float>> pixels, alone;
    for (size_t i = 0; i < passes.size(); ++i) {
      int64_t P = 0;
      for (const ImageGrid& g : passes[i]) P += g.num_patches();
      pixels.push_back(Pixels(P, pd, static_cast<uint32_t>(40 + i)));
      alone.push_back(Gpu(pixels[i], passes[i]));
    }
    gpu_->ReleaseActivations();  // so the shared activations grow while a pass is queued
    std::vector<int64_t> tickets(passes.size(), -1);
    const auto submit = [&](size_t i) {
      std::vector<float> host = pixels[i];
      auto t = gpu_->Submit(host.data(), static_cast<int64_t>(host.size()) / pd, passes[i]);
      ASSERT_TRUE(t.ok()) << t.status().ToString();
      std::fill(host.begin(), host.end(), std::nanf(""));  // staged already
      tickets[i] = *t;
    };
    const auto collect = [&](size_t i) {
      auto out = gpu_->Collect(tickets[i]);
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      EXPECT_EQ(*out, alone[i]) << "pass " << i;
    };
    ASSERT_NO_FATAL_FAILURE(submit(0));
    for (size_t i = 1; i < passes.size(); ++i) {
      ASSERT_NO_FATAL_FAILURE(submit(i));
      if (i == 1) {
        const int64_t P = static_cast<int64_t>(pixels[2].size()) / pd;
        EXPECT_EQ(gpu_->Submit(pixels[2].data(), P, passes[2]).status().code(), StatusCode::kInvalidArgument)
            << "a third pass outstanding";
      }
      ASSERT_NO_FATAL_FAILURE(collect(i - 1));
    }
    ASSERT_NO_FATAL_FAILURE(collect(passes.size() - 1));
    EXPECT_EQ(gpu_->Collect(tickets[0]).status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(gpu_->Collect(-1).status().code(), StatusCode::kInvalidArgument);
  }
}

// A profile counts every op as the CPU encoder's does and changes no value.
TEST_F(CudaVisionTest, ProfileCountsEveryOpAndChangesNothing) {
  ASSERT_NO_FATAL_FAILURE(Load("tiny", CudaPrecision::kBf16));
  const Golden golden("tiny", "two_images");
  const std::vector<float> pixels = golden.F32("pixel_values");
  const std::vector<ImageGrid> grids = GoldenGrids(golden);
  OpProfile prof;
  const std::vector<float> plain = Gpu(pixels, grids), profiled = Gpu(pixels, grids, &prof);
  EXPECT_EQ(plain, profiled);
  const VisionConfig& vc = model_->config().vision;
  const int64_t P = static_cast<int64_t>(pixels.size()) / vc.patch_dim(), E = vc.embed_dim;
  auto at = [](VisionOp op) { return static_cast<int>(op); };
  EXPECT_EQ(prof.calls[at(VisionOp::kPatchEmbed)], 1);
  EXPECT_EQ(prof.calls[at(VisionOp::kQkv)], vc.depth);
  EXPECT_EQ(prof.calls[at(VisionOp::kNorm)], 2 * vc.depth + 1);
  EXPECT_EQ(prof.calls[at(VisionOp::kMerger)], 2);
  EXPECT_DOUBLE_EQ(prof.flops[at(VisionOp::kQkv)], 2.0 * P * E * 3 * E * vc.depth);
  EXPECT_GT(prof.seconds[at(VisionOp::kFc1)], 0.0);
}

// Grids that do not match the pixels, or that the merge cannot split, are refused; no image gives
// no rows; the encoder is usable after a refusal.
TEST_F(CudaVisionTest, RefusesBadGridsAndStaysUsable) {
  ASSERT_NO_FATAL_FAILURE(Load("tiny", CudaPrecision::kBf16));
  const int64_t pd = model_->config().vision.patch_dim();
  const std::vector<float> pixels = Pixels(16, pd, 3);
  EXPECT_EQ(gpu_->Encode(pixels.data(), 16, {{1, 2, 4}}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(gpu_->Encode(pixels.data(), 15, {{1, 3, 5}}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(gpu_->Encode(nullptr, 16, {{1, 4, 4}}).status().code(), StatusCode::kInvalidArgument);
  auto none = gpu_->Encode(nullptr, 0, {});
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->empty());
  EXPECT_EQ(Gpu(pixels, {{1, 4, 4}}).size(),
            static_cast<size_t>(4 * model_->config().vision.out_hidden_size));
  EXPECT_GT(gpu_->activation_bytes(), 0u);
  gpu_->ReleaseActivations();
  EXPECT_EQ(gpu_->activation_bytes(), 0u);
}

// Runs everywhere: without a device, Create says so (Unavailable) instead of aborting; with one it
// succeeds. Weights whose shapes disagree with the config are refused before any upload.
TEST(CudaVisionArgsTest, CreateChecksTheDeviceAndTheShapes) {
  auto m = Qwen2VLModel::Load(FixturePath("tiny"), ModelLoadOptions());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  VisionConfig wrong = (*m)->config().vision;
  wrong.mlp_dim += 1;
  EXPECT_EQ(CudaVisionEncoder::Create(wrong, (*m)->weights().vision, (*m)->kernel_config()).status().code(),
            StatusCode::kInvalidArgument);
  auto e = CudaVisionEncoder::Create((*m)->config().vision, (*m)->weights().vision, (*m)->kernel_config());
  if (kernels::cuda::ProbeUsableCudaDevice(0).ok()) {
    EXPECT_TRUE(e.ok()) << e.status().ToString();
  } else {
    ASSERT_FALSE(e.ok());
    EXPECT_EQ(e.status().code(), StatusCode::kUnavailable) << e.status().ToString();
  }
  EXPECT_EQ(ParseCudaPrecision("bf16").value(), CudaPrecision::kBf16);
  EXPECT_EQ(ParseCudaPrecision("fp32").value(), CudaPrecision::kF32);
  EXPECT_FALSE(ParseCudaPrecision("fp16").ok());
}

}  // namespace
}  // namespace mineru
