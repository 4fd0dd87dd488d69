// smart_resize (transformers 5.17 table) and Qwen2-VL preprocessing against the golden tensors.
#include "image/preprocess.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "../util/files.h"
#include "../util/json_file.h"
#include "base/mapped_file.h"
#include "base/safetensors.h"
#include "image/decode.h"

namespace mineru {
namespace {

using testing::kFx;
using testing::LoadJson;

TEST(SmartResize, MatchesTransformersTable) {
  nlohmann::json table = LoadJson(kFx + "/smart_resize.json");
  ASSERT_TRUE(table.is_array());
  ASSERT_GT(table.size(), 30u);
  int errors = 0;
  for (const auto& e : table) {
    const int64_t h = e["h"], w = e["w"], mn = e["min_pixels"], mx = e["max_pixels"];
    SCOPED_TRACE(std::to_string(h) + "x" + std::to_string(w) + " min " + std::to_string(mn) + " max " +
                 std::to_string(mx));
    auto r = SmartResize(h, w, 28, mn, mx);
    if (e.contains("error")) {
      ++errors;
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
      EXPECT_EQ(r.status().message(), e["error"].get<std::string>());
    } else {
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(r->first, e["out_h"].get<int>());
      EXPECT_EQ(r->second, e["out_w"].get<int>());
    }
  }
  EXPECT_EQ(errors, 3);
}

TEST(SmartResize, EdgeCases) {
  // Python round-half-to-even: 42/28 = 1.5 -> 2, 70/28 = 2.5 -> 2.
  auto a = SmartResize(42, 70, 28, 3136, 1 << 30);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->first, 56);
  EXPECT_EQ(a->second, 56);
  // Non-integral ratio in the message, formatted as Python's repr(float).
  auto b = SmartResize(14, 3001, 28, 3136, 1 << 30);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().message(), "absolute aspect ratio must be smaller than 200, got 214.35714285714286");
  // Exactly 200 is allowed.
  EXPECT_TRUE(SmartResize(10, 2000, 28, 3136, 1 << 30).ok());
  // Degenerate input is an error, not a crash.
  EXPECT_FALSE(SmartResize(0, 10, 28, 3136, 1 << 30).ok());
  EXPECT_FALSE(SmartResize(10, -1, 28, 3136, 1 << 30).ok());
  EXPECT_FALSE(SmartResize(10, 10, 0, 3136, 1 << 30).ok());
  // The floor branch never goes below one factor.
  auto c = SmartResize(100, 19000, 28, 28 * 28, 28 * 28 * 4);
  ASSERT_TRUE(c.ok());
  EXPECT_GE(c->first, 28);
}

struct ImageGolden {
  std::vector<float> pil, proc;
  std::vector<int64_t> grid;  // [images, 3]
  int64_t rows = 0, cols = 0;
};

ImageGolden LoadGolden(const std::string& name) {
  ImageGolden g;
  auto f = SafetensorsFile::Open(kFx + "/tiny/golden_" + name + ".safetensors");
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  if (!f.ok()) return g;
  const TensorInfo* pil = (*f)->Find("pixel_values_pil");
  const TensorInfo* proc = (*f)->Find("pixel_values");
  const TensorInfo* grid = (*f)->Find("image_grid_thw");
  EXPECT_TRUE(pil && proc && grid);
  if (!pil || !proc || !grid) return g;
  EXPECT_EQ(pil->shape.size(), 2u);
  g.rows = pil->shape[0];
  g.cols = pil->shape[1];
  EXPECT_EQ(proc->shape, pil->shape);
  g.pil = *ReadAsF32(*pil);
  g.proc = *ReadAsF32(*proc);
  g.grid = *ReadAsI64(*grid);
  return g;
}

void CheckGolden(const std::string& name) {
  nlohmann::json meta = LoadJson(kFx + "/tiny/golden_" + name + ".json");
  ImageGolden g = LoadGolden(name);
  ASSERT_GT(g.rows, 0);
  ASSERT_EQ(g.cols, 1176);
  PreprocessConfig cfg;
  cfg.min_pixels = 3136;
  cfg.max_pixels = 50176;
  int64_t row0 = 0;
  double max_pil = 0, max_proc = 0;
  const auto& images = meta["images"];
  ASSERT_EQ(static_cast<int64_t>(g.grid.size()), static_cast<int64_t>(images.size()) * 3);
  for (size_t i = 0; i < images.size(); ++i) {
    SCOPED_TRACE(images[i].get<std::string>());
    auto img = DecodeImageFile(kFx + "/" + images[i].get<std::string>());
    ASSERT_TRUE(img.ok()) << img.status().ToString();
    EXPECT_EQ(img->width, meta["image_sizes_wh"][i][0].get<int>());
    EXPECT_EQ(img->height, meta["image_sizes_wh"][i][1].get<int>());
    auto pv = PreprocessImage(*img, cfg);
    ASSERT_TRUE(pv.ok()) << pv.status().ToString();
    EXPECT_EQ(pv->grid_t, g.grid[3 * i]);
    EXPECT_EQ(pv->grid_h, g.grid[3 * i + 1]);
    EXPECT_EQ(pv->grid_w, g.grid[3 * i + 2]);
    ASSERT_EQ(pv->patch_dim, 1176);
    ASSERT_EQ(pv->num_patches, pv->grid_t * pv->grid_h * pv->grid_w);
    EXPECT_EQ(pv->num_patches / 4, meta["n_image_tokens"][i].get<int>());
    ASSERT_LE(row0 + pv->num_patches, g.rows);
    for (int64_t r = 0; r < pv->num_patches; ++r) {
      for (int64_t c = 0; c < 1176; ++c) {
        const float got = pv->data[r * 1176 + c];
        const size_t k = static_cast<size_t>((row0 + r) * 1176 + c);
        max_pil = std::max(max_pil, static_cast<double>(std::fabs(got - g.pil[k])));
        max_proc = std::max(max_proc, static_cast<double>(std::fabs(got - g.proc[k])));
      }
    }
    row0 += pv->num_patches;
  }
  EXPECT_EQ(row0, g.rows);
  std::printf("%s: %lld rows, max |diff| vs pixel_values_pil %.3g, vs pixel_values %.3g\n", name.c_str(),
              static_cast<long long>(row0), max_pil, max_proc);
  EXPECT_LE(max_pil, 1e-6) << "vs pixel_values_pil";
  EXPECT_LE(max_proc, 0.02) << "vs pixel_values (torch antialiased bicubic)";
}

TEST(PreprocessGolden, OneImage) { CheckGolden("one_image"); }
TEST(PreprocessGolden, TwoImages) { CheckGolden("two_images"); }

TEST(Preprocess, PatchOrderWithoutResize) {
  // 56 x 84 is already a multiple of 28 and within budget: no resize. Check every element against
  // an independent evaluation of reshape(1, T, C, gh/2, 2, 14, gw/2, 2, 14).permute(0,3,6,4,7,2,1,5,8).
  RgbImage im;
  im.width = 84;
  im.height = 56;
  for (int y = 0; y < 56; ++y) {
    for (int x = 0; x < 84; ++x) {
      im.pixels.push_back(static_cast<uint8_t>(x * 3));
      im.pixels.push_back(static_cast<uint8_t>(y * 4));
      im.pixels.push_back(static_cast<uint8_t>((x + y) % 256));
    }
  }
  PreprocessConfig cfg;
  auto pv = PreprocessImage(im, cfg);
  ASSERT_TRUE(pv.ok()) << pv.status().ToString();
  ASSERT_EQ(pv->grid_h, 4);
  ASSERT_EQ(pv->grid_w, 6);
  ASSERT_EQ(pv->num_patches, 24);
  const int gh = 4, gw = 6;
  // Output index (b0=0, bh, bw, mh, mw, c, t, py, px) in the permuted 9-D tensor.
  for (int bh = 0; bh < gh / 2; ++bh)
    for (int bw = 0; bw < gw / 2; ++bw)
      for (int mh = 0; mh < 2; ++mh)
        for (int mw = 0; mw < 2; ++mw)
          for (int c = 0; c < 3; ++c)
            for (int t = 0; t < 2; ++t)
              for (int py = 0; py < 14; ++py)
                for (int px = 0; px < 14; ++px) {
                  const size_t flat =
                      ((((((((size_t)bh * (gw / 2) + bw) * 2 + mh) * 2 + mw) * 3 + c) * 2 + t) * 14 + py) *
                           14 +
                       px);
                  const int y = (bh * 2 + mh) * 14 + py, x = (bw * 2 + mw) * 14 + px;
                  const uint8_t v = im.pixels[(static_cast<size_t>(y) * 84 + x) * 3 + c];
                  const float a = static_cast<float>(v) * (1.0f / 255);
                  const float want = (a - cfg.image_mean[c]) / cfg.image_std[c];
                  ASSERT_EQ(pv->data[flat], want) << bh << " " << bw << " " << mh << " " << mw << " " << c;
                }
}

TEST(Preprocess, RejectsTinyAndHugeImages) {
  RgbImage small;
  small.width = 9;
  small.height = 100;
  small.pixels.assign(9 * 100 * 3, 0);
  auto a = PreprocessImage(small, PreprocessConfig{});
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(a.status().message().find("too small"), std::string::npos);

  RgbImage big;
  big.width = 200;
  big.height = 100;
  big.pixels.assign(200 * 100 * 3, 0);
  PreprocessConfig cfg;
  cfg.max_input_pixels = 10000;
  auto b = PreprocessImage(big, cfg);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kResourceExhausted);

  RgbImage wide;
  wide.width = 3000;
  wide.height = 10;
  wide.pixels.assign(3000 * 10 * 3, 0);
  auto c = PreprocessImage(wide, PreprocessConfig{});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("aspect ratio"), std::string::npos);

  RgbImage malformed;
  malformed.width = 20;
  malformed.height = 20;
  auto d = PreprocessImage(malformed, PreprocessConfig{});
  EXPECT_FALSE(d.ok());
}

TEST(Preprocess, RealBudgetLayoutSize) {
  // The layout image (1036 x 1036) is unchanged by smart_resize at the real budget: 74 x 74 grid.
  RgbImage im;
  im.width = 1036;
  im.height = 1036;
  im.pixels.assign(1036 * 1036 * 3, 77);
  auto pv = PreprocessImage(im, PreprocessConfig{});
  ASSERT_TRUE(pv.ok());
  EXPECT_EQ(pv->grid_h, 74);
  EXPECT_EQ(pv->grid_w, 74);
  EXPECT_EQ(pv->num_patches, 5476);
}

}  // namespace
}  // namespace mineru
