#include "pipeline/layout_picture.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "image/resize.h"

namespace mineru::pipeline {
namespace {

struct Rgb {
  uint8_t r, g, b;
};

Rgb ColorFor(const std::string& type) {
  if (type == "title") return {220, 40, 40};
  if (type == "text" || type == "ref_text" || type == "phonetic") return {40, 90, 220};
  if (type == "table") return {30, 160, 60};
  if (type == "image") return {200, 120, 0};
  if (type == "equation" || type == "equation_block") return {150, 50, 200};
  if (type == "code" || type == "algorithm") return {0, 150, 150};
  if (type == "list") return {120, 120, 20};
  // 1.2 types
  if (type == "doc_title") return {160, 0, 0};
  if (type == "paragraph_title") return {240, 110, 90};
  if (type == "chart") return {230, 170, 0};
  if (type == "image_block") return {140, 80, 0};
  if (type == "list_item" || type == "index") return {90, 140, 240};
  if (type == "formula_number") return {190, 120, 230};
  if (type.find("caption") != std::string::npos || type.find("footnote") != std::string::npos)
    return {230, 80, 160};
  return {128, 128, 128};  // header, footer, page_number, aside_text, unknown
}

void Fill(RgbImage* im, int x0, int y0, int x1, int y1, Rgb c) {
  x0 = std::max(0, x0);
  y0 = std::max(0, y0);
  x1 = std::min(im->width, x1);
  y1 = std::min(im->height, y1);
  for (int y = y0; y < y1; ++y) {
    uint8_t* p = im->pixels.data() + (static_cast<size_t>(y) * im->width + x0) * 3;
    for (int x = x0; x < x1; ++x, p += 3) {
      p[0] = c.r;
      p[1] = c.g;
      p[2] = c.b;
    }
  }
}

// 3x5 bitmap digits, one row per 3-bit pattern.
const uint8_t kDigits[10][5] = {{7, 5, 5, 5, 7}, {2, 6, 2, 2, 7}, {7, 1, 7, 4, 7}, {7, 1, 7, 1, 7},
                                {5, 5, 7, 1, 1}, {7, 4, 7, 1, 7}, {7, 4, 7, 5, 7}, {7, 1, 1, 1, 1},
                                {7, 5, 7, 5, 7}, {7, 5, 7, 1, 7}};

void DrawNumber(RgbImage* im, int x, int y, int number, int cell, Rgb bg) {
  const std::string s = std::to_string(number);
  const int w = static_cast<int>(s.size()) * 4 * cell + cell, h = 7 * cell;
  Fill(im, x, y, x + w, y + h, bg);
  for (size_t i = 0; i < s.size(); ++i) {
    const int d = s[i] - '0';
    for (int row = 0; row < 5; ++row) {
      for (int col = 0; col < 3; ++col) {
        if (kDigits[d][row] & (4 >> col)) {
          const int px = x + cell + static_cast<int>(i) * 4 * cell + col * cell, py = y + cell + row * cell;
          Fill(im, px, py, px + cell, py + cell, {255, 255, 255});
        }
      }
    }
  }
}

}  // namespace

RgbImage DrawLayout(const RgbImage& page, const std::vector<LayoutBlock>& blocks, int max_side) {
  RgbImage im = page;
  const int long_side = std::max(page.width, page.height);
  if (long_side > max_side && long_side > 0) {
    const double s = static_cast<double>(max_side) / long_side;
    im = ResizeBicubic(page, std::max(1, static_cast<int>(page.width * s)),
                       std::max(1, static_cast<int>(page.height * s)));
  }
  const int t = std::max(2, std::max(im.width, im.height) / 500);
  const int cell = std::max(2, std::max(im.width, im.height) / 250);
  for (size_t i = 0; i < blocks.size(); ++i) {
    const LayoutBlock& b = blocks[i];
    const Rgb c = ColorFor(b.type);
    const int x0 = static_cast<int>(b.x1 * im.width), y0 = static_cast<int>(b.y1 * im.height);
    const int x1 = static_cast<int>(b.x2 * im.width), y1 = static_cast<int>(b.y2 * im.height);
    Fill(&im, x0, y0, x1, y0 + t, c);
    Fill(&im, x0, y1 - t, x1, y1, c);
    Fill(&im, x0, y0, x0 + t, y1, c);
    Fill(&im, x1 - t, y0, x1, y1, c);
    DrawNumber(&im, x0, y0, static_cast<int>(i) + 1, cell, c);
  }
  return im;
}

}  // namespace mineru::pipeline
