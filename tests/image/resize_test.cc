// Pillow-exact bicubic resize (fixtures made with Pillow), crop and right-angle rotation.
#include "image/resize.h"

#include <gtest/gtest.h>

#include <string>

#include "../util/files.h"
#include "image/decode.h"

namespace mineru {
namespace {

using testing::kFx;

RgbImage Load(const std::string& path) {
  auto img = DecodeImageFile(path);
  EXPECT_TRUE(img.ok()) << img.status().ToString();
  return img.ok() ? *img : RgbImage{};
}

// Builds a w x h image whose pixel (x, y) is (x*10+y, 100+x, 200+y) (small sizes only).
RgbImage Tiny(int w, int h) {
  RgbImage im;
  im.width = w;
  im.height = h;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      im.pixels.push_back(static_cast<uint8_t>(x * 10 + y));
      im.pixels.push_back(static_cast<uint8_t>(100 + x));
      im.pixels.push_back(static_cast<uint8_t>(200 + y));
    }
  }
  return im;
}

std::vector<uint8_t> Px(const RgbImage& im, int x, int y) {
  const uint8_t* p = &im.pixels[(static_cast<size_t>(y) * im.width + x) * 3];
  return {p[0], p[1], p[2]};
}

class PillowBicubic : public ::testing::TestWithParam<std::pair<int, int>> {};

TEST_P(PillowBicubic, MatchesByteForByte) {
  const auto [w, h] = GetParam();
  RgbImage src = Load(kFx + "/resize/src.png");
  ASSERT_EQ(src.width, 173);
  ASSERT_EQ(src.height, 91);
  RgbImage want = Load(kFx + "/resize/bicubic_" + std::to_string(w) + "x" + std::to_string(h) + ".png");
  ASSERT_EQ(want.width, w);
  ASSERT_EQ(want.height, h);
  RgbImage got = ResizeBicubic(src, w, h);
  ASSERT_EQ(got.width, w);
  ASSERT_EQ(got.height, h);
  ASSERT_EQ(got.pixels.size(), want.pixels.size());
  size_t mismatches = 0, first = 0;
  int max_diff = 0;
  for (size_t i = 0; i < got.pixels.size(); ++i) {
    if (got.pixels[i] != want.pixels[i]) {
      if (mismatches++ == 0) first = i;
      max_diff = std::max(max_diff, std::abs(int(got.pixels[i]) - int(want.pixels[i])));
    }
  }
  EXPECT_EQ(mismatches, 0u) << "first mismatch at byte " << first << ", max diff " << max_diff;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PillowBicubic,
                         ::testing::Values(std::make_pair(84, 56), std::make_pair(196, 112),
                                           std::make_pair(56, 28), std::make_pair(345, 182)),
                         [](const auto& info) {
                           return std::to_string(info.param.first) + "x" + std::to_string(info.param.second);
                         });

TEST(ResizeBicubic, SameSizeIsACopy) {
  RgbImage src = Tiny(5, 4);
  RgbImage out = ResizeBicubic(src, 5, 4);
  EXPECT_EQ(out.width, 5);
  EXPECT_EQ(out.height, 4);
  EXPECT_EQ(out.pixels, src.pixels);
}

TEST(ResizeBicubic, ConstantImageStaysConstant) {
  RgbImage src;
  src.width = 37;
  src.height = 23;
  src.pixels.assign(37 * 23 * 3, 0);
  for (size_t i = 0; i < src.pixels.size(); i += 3) {
    src.pixels[i] = 10;
    src.pixels[i + 1] = 128;
    src.pixels[i + 2] = 255;
  }
  for (auto [w, h] : {std::make_pair(100, 7), std::make_pair(5, 60), std::make_pair(1, 1)}) {
    RgbImage out = ResizeBicubic(src, w, h);
    ASSERT_EQ(out.pixels.size(), static_cast<size_t>(w) * h * 3);
    for (size_t i = 0; i < out.pixels.size(); i += 3) {
      ASSERT_EQ(out.pixels[i], 10);
      ASSERT_EQ(out.pixels[i + 1], 128);
      ASSERT_EQ(out.pixels[i + 2], 255);
    }
  }
}

TEST(ResizeBicubic, OneAxisOnly) {
  // Only one pass runs when the other size is unchanged; the untouched axis is copied exactly.
  RgbImage src = Tiny(6, 5);
  RgbImage wide = ResizeBicubic(src, 6, 9);
  EXPECT_EQ(wide.width, 6);
  EXPECT_EQ(wide.height, 9);
  RgbImage tall = ResizeBicubic(src, 11, 5);
  EXPECT_EQ(tall.width, 11);
  EXPECT_EQ(tall.height, 5);
  // Green depends on x only: a vertical-only resize keeps each column's green value.
  for (int y = 0; y < 9; ++y) {
    for (int x = 0; x < 6; ++x) EXPECT_EQ(Px(wide, x, y)[1], 100 + x);
  }
  // Blue depends on y only: a horizontal-only resize keeps each row's blue value.
  for (int y = 0; y < 5; ++y) {
    for (int x = 0; x < 11; ++x) EXPECT_EQ(Px(tall, x, y)[2], 200 + y);
  }
}

TEST(ResizeBicubicBox, WholeImageBoxEqualsPlainResize) {
  RgbImage src = Load(kFx + "/resize/src.png");
  RgbImage a = ResizeBicubic(src, 84, 56);
  RgbImage b = ResizeBicubicBox(src, 84, 56, 0, 0, 173, 91);
  EXPECT_EQ(a.pixels, b.pixels);
}

TEST(ResizeBicubicBox, UnitScaleIntegerBoxIsACrop) {
  // At scale 1 with integer offsets the cubic kernel samples 1 at 0 and 0 at +-1, +-2.
  RgbImage src = Load(kFx + "/resize/src.png");
  RgbImage a = ResizeBicubicBox(src, 40, 30, 17, 9, 57, 39);
  RgbImage b = Crop(src, 17, 9, 57, 39);
  EXPECT_EQ(a.pixels, b.pixels);
}

TEST(Crop, Inside) {
  RgbImage src = Tiny(4, 3);
  RgbImage c = Crop(src, 1, 1, 3, 3);
  ASSERT_EQ(c.width, 2);
  ASSERT_EQ(c.height, 2);
  EXPECT_EQ(Px(c, 0, 0), Px(src, 1, 1));
  EXPECT_EQ(Px(c, 1, 0), Px(src, 2, 1));
  EXPECT_EQ(Px(c, 0, 1), Px(src, 1, 2));
  EXPECT_EQ(Px(c, 1, 1), Px(src, 2, 2));
}

TEST(Crop, PartlyOutsideIsZeroFilled) {
  RgbImage src = Tiny(3, 2);
  RgbImage c = Crop(src, -1, -1, 3, 2);  // 4 x 3
  ASSERT_EQ(c.width, 4);
  ASSERT_EQ(c.height, 3);
  const std::vector<uint8_t> zero = {0, 0, 0};
  for (int x = 0; x < 4; ++x) EXPECT_EQ(Px(c, x, 0), zero);
  for (int y = 0; y < 3; ++y) EXPECT_EQ(Px(c, 0, y), zero);
  for (int y = 1; y < 3; ++y) {
    for (int x = 1; x < 4; ++x) EXPECT_EQ(Px(c, x, y), Px(src, x - 1, y - 1));
  }
  RgbImage d = Crop(src, 2, 1, 5, 3);  // 3 x 2, only (0,0) inside
  ASSERT_EQ(d.width, 3);
  ASSERT_EQ(d.height, 2);
  EXPECT_EQ(Px(d, 0, 0), Px(src, 2, 1));
  EXPECT_EQ(Px(d, 1, 0), zero);
  EXPECT_EQ(Px(d, 0, 1), zero);
}

TEST(Crop, FullyOutsideAndEmpty) {
  RgbImage src = Tiny(3, 2);
  RgbImage c = Crop(src, 10, 10, 12, 11);
  ASSERT_EQ(c.width, 2);
  ASSERT_EQ(c.height, 1);
  EXPECT_EQ(c.pixels, std::vector<uint8_t>(6, 0));
  RgbImage e = Crop(src, 2, 1, 1, 0);  // x1 < x0: Pillow gives a 0 x 0 image
  EXPECT_EQ(e.width, 0);
  EXPECT_EQ(e.height, 0);
  EXPECT_TRUE(e.pixels.empty());
}

TEST(Rotate90s, HandComputed) {
  // 3 x 2 source, pixels named by (x, y):
  //   a(0,0) b(1,0) c(2,0)
  //   d(0,1) e(1,1) f(2,1)
  RgbImage src = Tiny(3, 2);
  auto a = Px(src, 0, 0), b = Px(src, 1, 0), c = Px(src, 2, 0);
  auto d = Px(src, 0, 1), e = Px(src, 1, 1), f = Px(src, 2, 1);

  // 90 counter-clockwise: c f / b e / a d (2 wide, 3 tall).
  RgbImage r90 = Rotate90s(src, 90);
  ASSERT_EQ(r90.width, 2);
  ASSERT_EQ(r90.height, 3);
  EXPECT_EQ(Px(r90, 0, 0), c);
  EXPECT_EQ(Px(r90, 1, 0), f);
  EXPECT_EQ(Px(r90, 0, 1), b);
  EXPECT_EQ(Px(r90, 1, 1), e);
  EXPECT_EQ(Px(r90, 0, 2), a);
  EXPECT_EQ(Px(r90, 1, 2), d);

  // 180: f e d / c b a.
  RgbImage r180 = Rotate90s(src, 180);
  ASSERT_EQ(r180.width, 3);
  ASSERT_EQ(r180.height, 2);
  EXPECT_EQ(Px(r180, 0, 0), f);
  EXPECT_EQ(Px(r180, 1, 0), e);
  EXPECT_EQ(Px(r180, 2, 0), d);
  EXPECT_EQ(Px(r180, 0, 1), c);
  EXPECT_EQ(Px(r180, 1, 1), b);
  EXPECT_EQ(Px(r180, 2, 1), a);

  // 270 counter-clockwise (= 90 clockwise): d a / e b / f c.
  RgbImage r270 = Rotate90s(src, 270);
  ASSERT_EQ(r270.width, 2);
  ASSERT_EQ(r270.height, 3);
  EXPECT_EQ(Px(r270, 0, 0), d);
  EXPECT_EQ(Px(r270, 1, 0), a);
  EXPECT_EQ(Px(r270, 0, 1), e);
  EXPECT_EQ(Px(r270, 1, 1), b);
  EXPECT_EQ(Px(r270, 0, 2), f);
  EXPECT_EQ(Px(r270, 1, 2), c);

  EXPECT_EQ(Rotate90s(src, 0).pixels, src.pixels);
  EXPECT_EQ(Rotate90s(src, 360).pixels, src.pixels);
  EXPECT_EQ(Rotate90s(src, -90).pixels, r270.pixels);
  EXPECT_EQ(Rotate90s(src, 450).pixels, r90.pixels);
  EXPECT_EQ(Rotate90s(Rotate90s(src, 90), 270).pixels, src.pixels);
}

}  // namespace
}  // namespace mineru
