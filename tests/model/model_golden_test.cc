// Golden tests: the engine against Hugging Face transformers on the two fixture models and three
// cases. Feeds the golden pixel_values (the processor's), so only the model is under test here.

#include <algorithm>
#include <cmath>

#include "engine/generate.h"
#include "golden_util.h"
#include "model/flops.h"
#include "model/mrope.h"
#include "model/qwen2vl.h"

namespace mineru {
namespace {

using testing::ExpectClose;
using testing::FixturePath;
using testing::Golden;

struct Case {
  const char* model;  // fixture path: a checkpoint folder or an LM .gguf
  const char* name;
  const char* mmproj = nullptr;  // the vision .gguf beside an LM .gguf
  const char* golden = nullptr;  // the goldens' model folder when model is a GGUF file
  float atol = 1e-4f;            // activations and logits (F16 weights round beyond 1e-4)
};

class ModelGoldenTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    ModelLoadOptions o;
    if (GetParam().mmproj) o.mmproj = FixturePath(GetParam().mmproj);
    auto m = Qwen2VLModel::Load(FixturePath(GetParam().model), o);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(m).value();
    golden_ =
        std::make_unique<Golden>(GetParam().golden ? GetParam().golden : GetParam().model, GetParam().name);
    atol_ = GetParam().atol;
    for (int64_t id : golden_->I64("input_ids")) ids_.push_back(static_cast<int32_t>(id));
    if (golden_->Has("image_grid_thw")) {
      std::vector<int64_t> thw = golden_->I64("image_grid_thw");
      for (size_t i = 0; i + 2 < thw.size(); i += 3) grids_.push_back({thw[i], thw[i + 1], thw[i + 2]});
      pixels_ = golden_->F32("pixel_values");
    }
  }

  std::unique_ptr<Qwen2VLModel> model_;
  std::unique_ptr<Golden> golden_;
  std::vector<int32_t> ids_;
  std::vector<ImageGrid> grids_;
  std::vector<float> pixels_;
  float atol_ = 1e-4f;
  ThreadPool pool_{2};
  kernels::KernelWorkspace ctx_{kernels::KernelConfig(), &pool_};  // the model's (default) kernels
};

TEST_P(ModelGoldenTest, MropePositionIdsMatch) {
  auto pos = ComputeMropePositions(ids_, grids_, model_->config().vision.spatial_merge_size,
                                   model_->config().image_token_id);
  ASSERT_TRUE(pos.ok()) << pos.status().ToString();
  std::vector<int64_t> want = golden_->I64("position_ids");
  const size_t n = ids_.size();
  ASSERT_EQ(want.size(), 3 * n);
  EXPECT_EQ(pos->t, std::vector<int64_t>(want.begin(), want.begin() + n));
  EXPECT_EQ(pos->h, std::vector<int64_t>(want.begin() + n, want.begin() + 2 * n));
  EXPECT_EQ(pos->w, std::vector<int64_t>(want.begin() + 2 * n, want.end()));
}

TEST_P(ModelGoldenTest, ActivationsAndLogitsMatch) {
  const ModelConfig& cfg = model_->config();
  const int64_t H = cfg.text.hidden_size, V = cfg.text.vocab_size;
  std::vector<float> image_embeds;
  if (!grids_.empty()) {
    VisionTrace trace;
    const int64_t patches = static_cast<int64_t>(pixels_.size()) / cfg.vision.patch_dim();
    auto e = model_->vision().Encode(pixels_.data(), patches, grids_, ctx_, &trace);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    image_embeds = std::move(e).value();
    ExpectClose(trace.patch_embed, golden_->F32("act.vision.patch_embed"), atol_, atol_, "patch_embed");
    ExpectClose(trace.block0, golden_->F32("act.vision.block0"), atol_, atol_, "vision block0");
    ExpectClose(image_embeds, golden_->F32("act.vision.merger"), atol_, atol_, "merger");
  }
  auto pos = ComputeMropePositions(ids_, grids_, cfg.vision.spatial_merge_size, cfg.image_token_id).value();
  auto embeds = model_->BuildInputEmbeddings(ids_, image_embeds);
  ASSERT_TRUE(embeds.ok()) << embeds.status().ToString();
  const int64_t n = static_cast<int64_t>(ids_.size());
  KvCache cache;
  DecoderTrace dtrace;
  std::vector<float> hidden(n * H);
  model_->decoder().Forward(embeds->data(), n, pos.t.data(), pos.h.data(), pos.w.data(), &cache,
                            hidden.data(), ctx_, &dtrace);
  ExpectClose(dtrace.layer0, golden_->F32("act.lm.layer0"), atol_, atol_, "lm layer0");
  ExpectClose(hidden, golden_->F32("act.lm.final_norm"), atol_, atol_, "final norm");

  std::vector<float> logits(n * V);
  model_->decoder().Logits(hidden.data(), n, logits.data(), ctx_);
  if (golden_->Has("logits")) {
    ExpectClose(logits, golden_->F32("logits"), atol_, atol_, "logits");
  } else {
    std::vector<float> last4(logits.end() - 4 * V, logits.end());
    ExpectClose(last4, golden_->F32("logits_last4"), atol_, atol_, "logits_last4");
    std::vector<int64_t> argmax = golden_->I64("logits_argmax");
    std::vector<float> mx = golden_->F32("logits_max"), lse = golden_->F32("logits_logsumexp");
    for (int64_t i = 0; i < n; ++i) {
      const float* row = logits.data() + i * V;
      int64_t best = std::max_element(row, row + V) - row;
      double m = row[best], s = 0;
      for (int64_t j = 0; j < V; ++j) s += std::exp(static_cast<double>(row[j]) - m);
      EXPECT_EQ(best, argmax[i]) << "argmax at " << i;
      EXPECT_NEAR(row[best], mx[i], atol_) << "max at " << i;
      EXPECT_NEAR(m + std::log(s), lse[i], 1e-3 * std::fabs(lse[i]) + atol_) << "logsumexp at " << i;
    }
  }
}

// A half-precision KV cache (what quantized models run with): the prompt as a prefill and then
// three single-token steps, so attention reads fp16 keys and values written by earlier calls. The
// final hidden states stay within cosine 0.9999 of the reference's per token, and differ from the
// fp32 cache's (the fp16 path ran), and the fp16 cache takes half the memory.
TEST_P(ModelGoldenTest, Fp16KvCacheStaysCloseToTheReference) {
  const ModelConfig& cfg = model_->config();
  const int64_t H = cfg.text.hidden_size;
  std::vector<float> image_embeds;
  if (!grids_.empty()) {
    const int64_t patches = static_cast<int64_t>(pixels_.size()) / cfg.vision.patch_dim();
    image_embeds = model_->vision().Encode(pixels_.data(), patches, grids_, ctx_).value();
  }
  auto pos = ComputeMropePositions(ids_, grids_, cfg.vision.spatial_merge_size, cfg.image_token_id).value();
  const std::vector<float> embeds = model_->BuildInputEmbeddings(ids_, image_embeds).value();
  const int64_t n = static_cast<int64_t>(ids_.size()), steps = 3, first = n - steps;
  ASSERT_GT(first, 0);
  auto run = [&](KvType type) {
    KvCache cache(type);
    std::vector<float> hidden(static_cast<size_t>(n * H));
    model_->decoder().Forward(embeds.data(), first, pos.t.data(), pos.h.data(), pos.w.data(), &cache,
                              hidden.data(), ctx_);
    for (int64_t i = first; i < n; ++i) {
      model_->decoder().Forward(embeds.data() + i * H, 1, pos.t.data() + i, pos.h.data() + i,
                                pos.w.data() + i, &cache, hidden.data() + i * H, ctx_);
    }
    return hidden;
  };
  const std::vector<float> half = run(KvType::kF16), full = run(KvType::kF32);
  const std::vector<float> want = golden_->F32("act.lm.final_norm");
  ASSERT_EQ(want.size(), half.size());
  EXPECT_NE(half, full);
  for (int64_t i = 0; i < n; ++i) {
    double dot = 0, na = 0, nb = 0;
    for (int64_t d = 0; d < H; ++d) {
      const double a = half[static_cast<size_t>(i * H + d)], b = want[static_cast<size_t>(i * H + d)];
      dot += a * b, na += a * a, nb += b * b;
    }
    EXPECT_GE(dot / std::sqrt(na * nb), 0.9999) << "token " << i;
  }
  KvCache f16(KvType::kF16), f32(KvType::kF32);
  const int64_t kv_dim = int64_t{cfg.text.num_kv_heads} * cfg.text.head_dim;
  f16.Reserve(1, cfg.text.num_layers, kv_dim);
  f32.Reserve(1, cfg.text.num_layers, kv_dim);
  EXPECT_EQ(static_cast<char*>(f16.Value(0, 0)) - static_cast<char*>(f16.Key(0, 0)),
            (static_cast<char*>(f32.Value(0, 0)) - static_cast<char*>(f32.Key(0, 0))) / 2);
}

TEST_P(ModelGoldenTest, GreedyGenerationMatches) {
  std::vector<ImageInput> images;
  size_t off = 0;
  const int64_t pd = model_->config().vision.patch_dim();
  for (const ImageGrid& g : grids_) {
    ImageInput in;
    in.grid = g;
    in.pixel_values.assign(pixels_.begin() + off, pixels_.begin() + off + g.num_patches() * pd);
    off += g.num_patches() * pd;
    images.push_back(std::move(in));
  }
  GenerateOptions opt;
  opt.max_new_tokens = 16;
  opt.ignore_eos = true;
  auto r = Generate(*model_, ids_, images, opt, &pool_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<int64_t> want = golden_->I64("generated_ids");
  std::vector<int64_t> got(r->ids.begin(), r->ids.end());
  EXPECT_EQ(got, want);
  EXPECT_EQ(r->finish_reason, FinishReason::kLength);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ModelGoldenTest,
                         ::testing::Values(Case{"tiny", "one_image"}, Case{"tiny", "two_images"},
                                           Case{"tiny", "text_only"}, Case{"tinyvocab", "one_image"},
                                           Case{"tinyvocab", "two_images"}, Case{"tinyvocab", "text_only"}),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return std::string(i.param.model) + "_" + i.param.name;
                         });

// The same weights as llama.cpp's GGUF pair (tests/fixtures/gguf: written by its converter). F32
// holds the bf16 checkpoint exactly, so it meets the same tolerance; F16 rounds the weights (about
// 1e-3 relative), so activations get a wider bound while the greedy ids must still be equal.
constexpr const char* kF32 = "gguf/tinyvocab/model-f32.gguf";
constexpr const char* kF32Proj = "gguf/tinyvocab/mmproj-f32.gguf";
constexpr const char* kF16 = "gguf/tinyvocab/model-f16.gguf";
constexpr const char* kF16Proj = "gguf/tinyvocab/mmproj-f16.gguf";
INSTANTIATE_TEST_SUITE_P(Gguf, ModelGoldenTest,
                         ::testing::Values(Case{kF32, "one_image", kF32Proj, "tinyvocab"},
                                           Case{kF32, "two_images", kF32Proj, "tinyvocab"},
                                           Case{kF32, "text_only", kF32Proj, "tinyvocab"},
                                           Case{kF16, "one_image", kF16Proj, "tinyvocab", 3e-2f},
                                           Case{kF16, "two_images", kF16Proj, "tinyvocab", 3e-2f},
                                           Case{kF16, "text_only", kF16Proj, "tinyvocab", 3e-2f}),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return std::string(i.param.model == kF32 ? "f32_" : "f16_") + i.param.name;
                         });

// The image grids a golden case recorded (image_grid_thw, three values per image).
std::vector<ImageGrid> GoldenGrids(Golden& golden) {
  std::vector<ImageGrid> grids;
  const std::vector<int64_t> thw = golden.I64("image_grid_thw");
  for (size_t i = 0; i + 2 < thw.size(); i += 3) grids.push_back({thw[i], thw[i + 1], thw[i + 2]});
  return grids;
}

// A profile changes nothing in the output and accounts every op: one qkv/out/fc1/fc2 product
// and two norms per block, attention once per frame per block, and the products' work exactly.
TEST(VisionProfileTest, CountsEveryOpAndChangesNothing) {
  auto m = Qwen2VLModel::Load(FixturePath("tiny"), ModelLoadOptions());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  Golden golden("tiny", "two_images");
  const std::vector<ImageGrid> grids = GoldenGrids(golden);
  const std::vector<float> pixels = golden.F32("pixel_values");
  const VisionConfig& vc = (*m)->config().vision;
  const int64_t P = static_cast<int64_t>(pixels.size()) / vc.patch_dim();
  ThreadPool pool(2);
  const kernels::KernelWorkspace ctx((*m)->kernel_config(), &pool);
  auto plain = (*m)->vision().Encode(pixels.data(), P, grids, ctx);
  OpProfile prof;
  auto profiled = (*m)->vision().Encode(pixels.data(), P, grids, ctx, nullptr, &prof);
  ASSERT_TRUE(plain.ok() && profiled.ok());
  EXPECT_EQ(*plain, *profiled);
  const int64_t blocks = vc.depth, E = vc.embed_dim, M = vc.mlp_dim;
  int64_t frames = 0;
  for (const ImageGrid& g : grids) frames += g.t;
  ASSERT_EQ(grids.size(), 2u);
  auto at = [](VisionOp op) { return static_cast<int>(op); };
  EXPECT_EQ(prof.calls[at(VisionOp::kPatchEmbed)], 1);
  EXPECT_EQ(prof.calls[at(VisionOp::kQkv)], blocks);
  EXPECT_EQ(prof.calls[at(VisionOp::kAttention)], blocks * frames);
  EXPECT_EQ(prof.calls[at(VisionOp::kNorm)], 2 * blocks + 1);
  EXPECT_EQ(prof.calls[at(VisionOp::kMerger)], 2);
  EXPECT_DOUBLE_EQ(prof.flops[at(VisionOp::kQkv)], 2.0 * P * E * 3 * E * blocks);
  EXPECT_DOUBLE_EQ(prof.flops[at(VisionOp::kFc1)], 2.0 * P * E * M * blocks);
  EXPECT_DOUBLE_EQ(prof.flops[at(VisionOp::kNorm)], 0.0);
  // The closed form the benchmarks divide (model/flops.h) counts what the profile counted.
  double profiled_flops = 0, closed_form = 0;
  for (double f : prof.flops) profiled_flops += f;
  for (const ImageGrid& g : grids) closed_form += VisionFlops(vc, g);
  EXPECT_NEAR(closed_form, profiled_flops, 1e-9 * profiled_flops);
}

// The decoder's closed form: the products of every token plus attention over each token's keys,
// so n tokens at once cost what n one-token steps cost, and a longer context costs more.
TEST(DecoderFlopsTest, ChunksAddUpAndContextCosts) {
  auto m = Qwen2VLModel::Load(FixturePath("tiny"), ModelLoadOptions());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const TextConfig& t = (*m)->config().text;
  double steps = 0;
  for (int64_t i = 0; i < 7; ++i) steps += DecoderFlops(t, 10 + i, 1);
  EXPECT_NEAR(DecoderFlops(t, 10, 7), steps, 1e-9 * steps);
  EXPECT_GT(DecoderFlops(t, 1000, 1), DecoderFlops(t, 0, 1));
  const double H = t.hidden_size, I = t.intermediate_size, QD = static_cast<double>(t.num_heads) * t.head_dim,
               KD = static_cast<double>(t.num_kv_heads) * t.head_dim;
  EXPECT_DOUBLE_EQ(DecoderFlops(t, 0, 1),
                   t.num_layers * (2 * H * (QD + 2 * KD) + 2 * QD * H + 6 * H * I + 4 * QD));
  EXPECT_DOUBLE_EQ(LmHeadFlops(t), 2.0 * H * t.vocab_size);
}

// Encode taking its pixel values (freed once embedded) computes what Encode over a pointer does,
// and refuses values that are not whole patches.
TEST(VisionOwnedPixelsTest, SameOutputAndChecksTheSize) {
  auto m = Qwen2VLModel::Load(FixturePath("tiny"), ModelLoadOptions());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  Golden golden("tiny", "two_images");
  const std::vector<ImageGrid> grids = GoldenGrids(golden);
  std::vector<float> pixels = golden.F32("pixel_values");
  const int64_t P = static_cast<int64_t>(pixels.size()) / (*m)->config().vision.patch_dim();
  ThreadPool pool(2);
  const kernels::KernelWorkspace ctx((*m)->kernel_config(), &pool);
  auto by_pointer = (*m)->vision().Encode(pixels.data(), P, grids, ctx);
  std::vector<float> copy = pixels;
  auto owned = (*m)->vision().Encode(std::move(copy), grids, ctx);
  ASSERT_TRUE(by_pointer.ok() && owned.ok());
  EXPECT_EQ(*by_pointer, *owned);
  pixels.pop_back();
  EXPECT_FALSE((*m)->vision().Encode(std::move(pixels), grids, ctx).ok());
}

// An image of more patches than one chunk (1,024 rows) runs norm1, the qkv product and the MLP in
// chunks, and its attention in place over the queries: a small image
// packed after it comes out as it does alone, and so does the big one's first row group.
TEST(VisionChunkTest, ImagesPastOneChunkMatchThemselvesAlone) {
  auto m = Qwen2VLModel::Load(FixturePath("tiny"), ModelLoadOptions());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const VisionConfig& vc = (*m)->config().vision;
  const ImageGrid big{1, 66, 66}, small{1, 4, 6};  // 4,356 patches: five chunks of 872
  std::vector<float> pixels((big.num_patches() + small.num_patches()) * vc.patch_dim());
  uint32_t seed = 7;
  for (float& v : pixels) {
    seed = seed * 1664525u + 1013904223u;
    v = static_cast<float>(seed >> 8) / static_cast<float>(1u << 24) * 2.0f - 1.0f;
  }
  ThreadPool pool(2);
  const kernels::KernelWorkspace ctx((*m)->kernel_config(), &pool);
  auto both =
      (*m)->vision().Encode(pixels.data(), big.num_patches() + small.num_patches(), {big, small}, ctx);
  auto alone = (*m)->vision().Encode(pixels.data() + big.num_patches() * vc.patch_dim(), small.num_patches(),
                                     {small}, ctx);
  auto big_alone = (*m)->vision().Encode(pixels.data(), big.num_patches(), {big}, ctx);
  ASSERT_TRUE(both.ok() && alone.ok() && big_alone.ok());
  const size_t big_rows = big_alone->size();
  ASSERT_EQ(both->size(), big_rows + alone->size());
  // The products may sum in another order for another row count (another kernel path on some
  // targets), so the bound is relative to the output's scale; a row taken from the wrong chunk
  // or left out is off by the whole scale.
  auto close = [](const float* a, const float* b, size_t n) {
    double worst = 0, scale = 0;
    for (size_t i = 0; i < n; ++i) {
      worst = std::max(worst, std::fabs(double(a[i]) - b[i]));
      scale = std::max(scale, std::fabs(double(b[i])));
    }
    return worst / scale;
  };
  EXPECT_LT(close(both->data() + big_rows, alone->data(), alone->size()), 1e-4);
  EXPECT_LT(close(both->data(), big_alone->data(), big_rows), 1e-4);
  // No image at all: no rows, no error (and no division by a zero chunk count).
  auto none = (*m)->vision().Encode(nullptr, 0, {}, ctx);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->empty());
}

}  // namespace
}  // namespace mineru
