// Quantized weights: a pre-quantized checkpoint equals load-time quantization, loads without
// conversion, and a lying pre-quantized tensor is an error.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <utility>

#include "base/mapped_file.h"
#include "engine/generate.h"
#include "golden_util.h"
#include "kernels/kernels.h"
#include "kernels/quant.h"
#include "model/quantize.h"
#include "model/qwen2vl.h"

namespace mineru {
namespace {

std::vector<int32_t> Greedy(const Qwen2VLModel& m) {
  GenerateOptions o;
  o.max_new_tokens = 6;
  o.ignore_eos = true;
  auto r = Generate(m, {1, 2, 3, 4, 5}, {}, o, nullptr);
  EXPECT_TRUE(r.ok());
  return r.ok() ? r->ids : std::vector<int32_t>{};
}

TEST(QuantizeTest, PreQuantizedEqualsLoadTimeQuantization) {
  for (const char* q : {"q8", "q4", "q4_g128"}) {
    const std::string dir = std::string(MINERU_BINARY_DIR) + "/test_tmp/quant_" + q;
    ::mkdir((std::string(MINERU_BINARY_DIR) + "/test_tmp").c_str(), 0755);
    ThreadPool pool(2);
    auto qt = ParseQuantName(q);
    ASSERT_TRUE(qt.ok());
    ASSERT_TRUE(WriteQuantizedModel(testing::FixturePath("tiny"), dir, *qt, &pool).ok());
    auto pre = Qwen2VLModel::Load(dir);
    ASSERT_TRUE(pre.ok()) << pre.status().ToString();
    auto live = Qwen2VLModel::Load(testing::FixturePath("tiny"), q, &pool);
    ASSERT_TRUE(live.ok());
    EXPECT_TRUE((*pre)->weights().text.layers[0].gate.quantized());
    EXPECT_EQ(Greedy(**pre), Greedy(**live)) << q;
  }
  EXPECT_FALSE(Qwen2VLModel::Load(testing::FixturePath("tiny"), "q3").ok());
}

// A pre-quantized file's vision matrices get panels packed at load where the CPU runs the panel
// kernel (their rows are the file's pages); quantized at load they are repacked per call. Both
// multiply the same bytes alike: the vision outputs are equal bit for bit.
TEST(QuantizeTest, VisionPanelsPackedAtLoadChangeNothing) {
  const std::string dir = std::string(MINERU_BINARY_DIR) + "/test_tmp/quant_vision_panels";
  ::mkdir((std::string(MINERU_BINARY_DIR) + "/test_tmp").c_str(), 0755);
  ThreadPool pool(2);
  ASSERT_TRUE(WriteQuantizedModel(testing::FixturePath("tiny"), dir, QuantType::kQ8_0, &pool).ok());
  auto pre = Qwen2VLModel::Load(dir);
  auto live = Qwen2VLModel::Load(testing::FixturePath("tiny"), "q8", &pool);
  ASSERT_TRUE(pre.ok() && live.ok());
  const WeightView& fc1 = (*pre)->weights().vision.blocks[0].fc1;
  ASSERT_TRUE(fc1.quantized());
  EXPECT_EQ(fc1.panels != nullptr, kernels::IntegerPanelsAvailable((*pre)->kernel_config()));
  EXPECT_EQ((*live)->weights().vision.blocks[0].fc1.panels, nullptr);
  testing::Golden golden("tiny", "two_images");
  std::vector<ImageGrid> grids;
  const std::vector<int64_t> thw = golden.I64("image_grid_thw");
  for (size_t i = 0; i + 2 < thw.size(); i += 3) grids.push_back({thw[i], thw[i + 1], thw[i + 2]});
  const std::vector<float> pixels = golden.F32("pixel_values");
  const int64_t P = static_cast<int64_t>(pixels.size()) / (*pre)->config().vision.patch_dim();
  const kernels::KernelWorkspace ctx((*pre)->kernel_config(), &pool);
  auto a = (*pre)->vision().Encode(pixels.data(), P, grids, ctx);
  auto b = (*live)->vision().Encode(pixels.data(), P, grids, ctx);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
}

// The vision encoder's layouts change no value where they promise not to: any chunk size gives the
// same bits in both attention forms (two small frames, packed beside their fp16 rows, and one
// frame of 576 patches, packed in place over them); and the packed form (fp16 keys and values,
// int8 panels packed once per block, queries in runs) stays within cosine 0.999 per merged token of
// the [P, 3E] form. Where the packed kernels do not run the two forms are one.
TEST(QuantizeTest, VisionLayoutsChangeNoValue) {
  const std::string dir = std::string(MINERU_BINARY_DIR) + "/test_tmp/quant_vision_layouts";
  ::mkdir((std::string(MINERU_BINARY_DIR) + "/test_tmp").c_str(), 0755);
  ThreadPool pool(2);
  ASSERT_TRUE(WriteQuantizedModel(testing::FixturePath("tiny"), dir, QuantType::kQ8_0, &pool).ok());
  auto m = Qwen2VLModel::Load(dir);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const VisionConfig& vc = (*m)->config().vision;
  const VisionWeights& vw = (*m)->weights().vision;
  testing::Golden golden("tiny", "two_images");
  std::vector<ImageGrid> two;
  const std::vector<int64_t> thw = golden.I64("image_grid_thw");
  for (size_t i = 0; i + 2 < thw.size(); i += 3) two.push_back({thw[i], thw[i + 1], thw[i + 2]});
  const std::vector<float> two_pixels = golden.F32("pixel_values");
  const std::vector<ImageGrid> big = {{1, 24, 24}};
  std::vector<float> big_pixels(static_cast<size_t>(576 * vc.patch_dim()));
  for (size_t i = 0; i < big_pixels.size(); ++i)
    big_pixels[i] = static_cast<float>((i * 7919) % 2001) / 1000.0f - 1.0f;
  kernels::AttentionShape s;
  s.n_q = s.n_kv = 576;
  s.num_heads = s.num_kv_heads = vc.num_heads;
  s.head_dim = vc.head_dim();
  s.int8_qk = s.int8_pv = true;
  const kernels::KernelWorkspace ctx((*m)->kernel_config(), &pool);
  const bool packs = kernels::PackedAttentionRuns(s, ctx.config());
  for (const auto& input : {std::pair{two, two_pixels}, std::pair{big, big_pixels}}) {
    const std::vector<ImageGrid>& grids = input.first;
    const std::vector<float>& pixels = input.second;
    const int64_t P = static_cast<int64_t>(pixels.size()) / vc.patch_dim();
    auto encode = [&](int64_t chunk, bool packed) {
      const VisionEncoder enc(vc, vw, VisionEncoderOptions{chunk, packed});
      auto r = enc.Encode(pixels.data(), P, grids, ctx);
      EXPECT_TRUE(r.ok());
      return r.ok() ? *r : std::vector<float>{};
    };
    const std::vector<float> packed = encode(1024, true), flat = encode(1024, false);
    // Chunks whose products keep 48 rows or more (quantized products take other kernels, with
    // other float orders, below that on some CPUs; the default chunks are larger still).
    for (int64_t chunk : {int64_t{192}, int64_t{288}}) {
      EXPECT_EQ(encode(chunk, true), packed) << "P=" << P << " chunk " << chunk;
      EXPECT_EQ(encode(chunk, false), flat) << "P=" << P << " chunk " << chunk;
    }
    EXPECT_EQ(packed == flat, !packs) << "P=" << P;
    const int64_t H = (*m)->config().vision.out_hidden_size;
    ASSERT_EQ(packed.size(), flat.size());
    for (size_t t = 0; t < packed.size() / static_cast<size_t>(H); ++t) {
      double ab = 0, aa = 0, bb = 0;
      for (int64_t d = 0; d < H; ++d) {
        const double a = packed[t * H + d], b = flat[t * H + d];
        ab += a * b, aa += a * a, bb += b * b;
      }
      EXPECT_GE(ab / std::sqrt(aa * bb), 0.999) << "P=" << P << " token " << t;
    }
  }
}

TEST(QuantizeTest, LyingQuantizedTensorIsAnError) {
  const std::string dir = std::string(MINERU_BINARY_DIR) + "/test_tmp/quant_src_for_bad";
  ::mkdir((std::string(MINERU_BINARY_DIR) + "/test_tmp").c_str(), 0755);
  ASSERT_TRUE(WriteQuantizedModel(testing::FixturePath("tiny"), dir, QuantType::kQ8_0, nullptr).ok());
  // Rewrite the pre-quantized file with one quantized tensor one row short.
  auto f = SafetensorsFile::Open(dir + "/model.safetensors").value();
  std::vector<TensorToWrite> ts;
  for (const auto& t : f->tensors()) {
    TensorToWrite w{t.name, t.dtype, t.shape, std::string(reinterpret_cast<const char*>(t.data), t.nbytes)};
    if (t.name == "model.layers.0.mlp.up_proj.weight") {
      w.shape[0] -= 1;
      w.bytes.resize(w.bytes.size() - static_cast<size_t>(t.shape[1]));
    }
    ts.push_back(std::move(w));
  }
  const std::string bad = std::string(MINERU_BINARY_DIR) + "/test_tmp/quant_bad";
  ::mkdir(bad.c_str(), 0755);
  ASSERT_TRUE(WriteStringToFile(bad + "/config.json", ReadFileToString(dir + "/config.json").value()).ok());
  ASSERT_TRUE(WriteSafetensors(bad + "/model.safetensors", ts, f->metadata()).ok());
  auto m = Qwen2VLModel::Load(bad);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("up_proj"), std::string::npos) << m.status().ToString();
}

}  // namespace
}  // namespace mineru
