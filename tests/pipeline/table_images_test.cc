// Table image masking (1.2.1's mask_and_encode_table_image with deterministic tokens): the image's
// area in the table crop is replaced by the surrounding colour and a drawn token, the token maps to
// a JPEG data URI of the image, and post-processing restores it as <img>.
#include <gtest/gtest.h>

#include "image/resize.h"
#include "pipeline/extract/vlu_1_2/post_process.h"
#include "pipeline/table_images.h"

namespace mineru::pipeline {
namespace {

RgbImage Page(int w, int h) {
  RgbImage im;
  im.width = w;
  im.height = h;
  im.pixels.assign(static_cast<size_t>(w) * h * 3, 255);
  return im;
}

void Paint(RgbImage* im, int x0, int y0, int x1, int y1, uint8_t r, uint8_t g, uint8_t b) {
  for (int y = y0; y < y1; ++y) {
    for (int x = x0; x < x1; ++x) {
      uint8_t* p = &im->pixels[(static_cast<size_t>(y) * im->width + x) * 3];
      p[0] = r, p[1] = g, p[2] = b;
    }
  }
}

int CountColor(const RgbImage& im, int r, int g, int b) {
  int n = 0;
  for (size_t i = 0; i < im.pixels.size(); i += 3)
    n += im.pixels[i] == r && im.pixels[i + 1] == g && im.pixels[i + 2] == b;
  return n;
}

TEST(TableImages, TokensAreDeterministicAndDistinct) {
  EXPECT_EQ(TableImageToken(0, 0), "[AAAA]");
  EXPECT_EQ(TableImageToken(3, 1), TableImageToken(3, 1));
  EXPECT_NE(TableImageToken(3, 1), TableImageToken(3, 2));
  EXPECT_EQ(TableImageToken(5, 9).size(), 6u);
}

TEST(TableImages, MaskReplacesTheImageWithAToken) {
  RgbImage page = Page(400, 200);
  Paint(&page, 120, 60, 280, 140, 255, 0, 0);  // the image inside the table
  LayoutBlock table{"table", 0.1, 0.1, 0.9, 0.9, 0};
  LayoutBlock image{"image", 0.3, 0.3, 0.7, 0.7, 0};
  RgbImage crop = Crop(page, 40, 20, 360, 180);
  ASSERT_GT(CountColor(crop, 255, 0, 0), 10000);
  const TableImageTokens t = MaskTableImages(page, table, 0, {&image}, crop.width, crop.height, &crop);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].first, "[AAAA]");
  EXPECT_EQ(t[0].second.rfind("data:image/jpeg;base64,/9j/", 0), 0u);
  EXPECT_EQ(CountColor(crop, 255, 0, 0), 0);  // masked with the white around it
  EXPECT_GT(CountColor(crop, 0, 0, 0), 100);  // the token, drawn in black
}

TEST(TableImages, RotatedTableMasksTheRotatedBox) {
  RgbImage page = Page(400, 200);
  Paint(&page, 120, 60, 280, 140, 0, 0, 255);
  LayoutBlock table{"table", 0.1, 0.1, 0.9, 0.9, 90};
  LayoutBlock image{"image", 0.3, 0.3, 0.7, 0.7, 0};
  RgbImage crop = Rotate90s(Crop(page, 40, 20, 360, 180), 90);
  const TableImageTokens t = MaskTableImages(page, table, 2, {&image}, 320, 160, &crop);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(CountColor(crop, 0, 0, 255), 0);
}

TEST(TableImages, TokensInTheTableOutputBecomeImages) {
  const TableImageTokens t = {{"[AAAA]", "data:image/jpeg;base64,XYZ"}};
  EXPECT_EQ(ReplaceTableImageTokens("<td>[ AAAA ]</td><td>[AAAB]</td>", t),
            "<td><img src=\"data:image/jpeg;base64,XYZ\"/></td><td>[AAAB]</td>");
  std::vector<LayoutBlock> layout = {{"table", 0.1, 0.1, 0.9, 0.9, 0}};
  const auto blocks = PostProcessPageV12(layout, {std::string("<fcel>[AAAA]<fcel>x<nl>")}, {}, {t});
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(*blocks[0].content,
            "<table><tr><td><img src=\"data:image/jpeg;base64,XYZ\"/></td><td>x</td></tr></table>");
}

}  // namespace
}  // namespace mineru::pipeline
