// pipeline/table_images.cc — table image masking and tokens (see table_images.h).
#include "pipeline/table_images.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>

#include "image/decode.h"
#include "image/resize.h"

namespace mineru::pipeline {

namespace {

constexpr std::string_view kTokenChars = "ACDGHKTWXYZ2345678";

// 5x7 glyphs (row-major, bit 4 = leftmost column) for the token alphabet and the brackets.
struct Glyph {
  char c;
  std::array<uint8_t, 7> rows;
};
constexpr Glyph kGlyphs[] = {
    {'A', {0x0E, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11}}, {'C', {0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E}},
    {'D', {0x1E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x1E}}, {'G', {0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F}},
    {'H', {0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11}}, {'K', {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11}},
    {'T', {0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04}}, {'W', {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A}},
    {'X', {0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11}}, {'Y', {0x11, 0x11, 0x0A, 0x04, 0x04, 0x04, 0x04}},
    {'Z', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F}}, {'2', {0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F}},
    {'3', {0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E}}, {'4', {0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02}},
    {'5', {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E}}, {'6', {0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E}},
    {'7', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08}}, {'8', {0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E}},
    {'[', {0x0E, 0x08, 0x08, 0x08, 0x08, 0x08, 0x0E}}, {']', {0x0E, 0x02, 0x02, 0x02, 0x02, 0x02, 0x0E}},
};

const Glyph* FindGlyph(char c) {
  for (const Glyph& g : kGlyphs) {
    if (g.c == c) return &g;
  }
  return nullptr;
}

struct Rgb {
  int r = 255, g = 255, b = 255;
};

Rgb Pixel(const RgbImage& im, int x, int y) {
  x = std::clamp(x, 0, im.width - 1);
  y = std::clamp(y, 0, im.height - 1);
  const uint8_t* p = &im.pixels[(static_cast<size_t>(y) * im.width + x) * 3];
  return {p[0], p[1], p[2]};
}

// _get_average_color: 8 points 2 px outside the box (clamped to the image), integer mean.
Rgb AverageAround(const RgbImage& im, int l, int u, int r, int d) {
  const int mx = (l + r) / 2, my = (u + d) / 2;
  const int pts[8][2] = {{l - 2, u - 2}, {mx, u - 2}, {r + 2, u - 2}, {r + 2, my},
                         {r + 2, d + 2}, {mx, d + 2}, {l - 2, d + 2}, {l - 2, my}};
  Rgb sum{0, 0, 0};
  for (const auto& p : pts) {
    const Rgb c = Pixel(im, p[0], p[1]);
    sum.r += c.r;
    sum.g += c.g;
    sum.b += c.b;
  }
  return {sum.r / 8, sum.g / 8, sum.b / 8};
}

// ImageDraw.rectangle fills both end coordinates.
void FillInclusive(RgbImage* im, int x0, int y0, int x1, int y1, Rgb c) {
  for (int y = std::max(0, y0); y <= std::min(im->height - 1, y1); ++y) {
    for (int x = std::max(0, x0); x <= std::min(im->width - 1, x1); ++x) {
      uint8_t* p = &im->pixels[(static_cast<size_t>(y) * im->width + x) * 3];
      p[0] = static_cast<uint8_t>(c.r);
      p[1] = static_cast<uint8_t>(c.g);
      p[2] = static_cast<uint8_t>(c.b);
    }
  }
}

// Draws `text` centred in the box at the largest integer scale whose size fits 70% of the box.
void DrawToken(RgbImage* im, const std::string& text, int x0, int y0, int box_w, int box_h, Rgb color) {
  const int n = static_cast<int>(text.size());
  int scale = 0;
  while ((n * 6 - 1) * (scale + 1) <= 0.7 * box_w && 7 * (scale + 1) <= 0.7 * box_h) ++scale;
  if (scale == 0) return;
  const int tw = (n * 6 - 1) * scale, th = 7 * scale;
  const int ox = x0 + (box_w - tw) / 2, oy = y0 + (box_h - th) / 2;
  for (int i = 0; i < n; ++i) {
    const Glyph* g = FindGlyph(text[i]);
    if (!g) continue;
    for (int row = 0; row < 7; ++row) {
      for (int col = 0; col < 5; ++col) {
        if (!(g->rows[row] & (0x10 >> col))) continue;
        const int px = ox + (i * 6 + col) * scale, py = oy + row * scale;
        FillInclusive(im, px, py, px + scale - 1, py + scale - 1, color);
      }
    }
  }
}

std::string Base64(const std::string& in) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (static_cast<uint8_t>(in[i]) << 16) | (static_cast<uint8_t>(in[i + 1]) << 8) |
                       static_cast<uint8_t>(in[i + 2]);
    for (int k = 3; k >= 0; --k) out += kAlphabet[(v >> (6 * k)) & 63];
  }
  if (i < in.size()) {
    uint32_t v = static_cast<uint8_t>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<uint8_t>(in[i + 1]) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

int NormAngle(const std::optional<int>& a) { return a && (*a == 90 || *a == 180 || *a == 270) ? *a : 0; }

// _rotate_box_in_image: the box after rotating the w x h crop counter-clockwise.
std::array<int, 4> RotateBox(std::array<int, 4> b, int w, int h, int angle) {
  const auto [x1, y1, x2, y2] = b;
  if (angle == 90) return {y1, w - x2, y2, w - x1};
  if (angle == 180) return {w - x2, h - y2, w - x1, h - y1};
  if (angle == 270) return {h - y2, x1, h - y1, x2};
  return b;
}

}  // namespace

std::string TableImageToken(size_t table_index, size_t k) {
  const size_t n = kTokenChars.size();
  size_t v = (table_index * 1009 + k * 7) % (n * n * n * n);
  std::string code(4, 'A');
  for (int i = 3; i >= 0; --i) {
    code[i] = kTokenChars[v % n];
    v /= n;
  }
  return "[" + code + "]";
}

TableImageTokens MaskTableImages(const RgbImage& page, const LayoutBlock& table, size_t table_index,
                                 const std::vector<const LayoutBlock*>& images, int crop_w, int crop_h,
                                 RgbImage* rotated_crop) {
  TableImageTokens tokens;
  const int W = page.width, H = page.height;
  const int tx = static_cast<int>(table.x1 * W), ty = static_cast<int>(table.y1 * H);
  const int angle = NormAngle(table.angle);
  for (size_t k = 0; k < images.size(); ++k) {
    const LayoutBlock& im = *images[k];
    const double ax1 = im.x1 * W, ay1 = im.y1 * H, ax2 = im.x2 * W, ay2 = im.y2 * H;
    const int rx1 = static_cast<int>(std::max(0.0, ax1 - tx)),
              ry1 = static_cast<int>(std::max(0.0, ay1 - ty));
    const int rx2 = static_cast<int>(std::min<double>(crop_w, ax2 - tx));
    const int ry2 = static_cast<int>(std::min<double>(crop_h, ay2 - ty));
    if (rx2 <= rx1 || ry2 <= ry1) continue;
    RgbImage piece = Crop(page, static_cast<int>(ax1), static_cast<int>(ay1), static_cast<int>(ax2),
                          static_cast<int>(ay2));
    if (piece.width < 1 || piece.height < 1) continue;
    const std::string token = TableImageToken(table_index, k);
    std::string jpeg;
    if (!EncodeJpeg(angle ? Rotate90s(piece, angle) : piece, &jpeg, 75).ok()) continue;
    tokens.emplace_back(token, "data:image/jpeg;base64," + Base64(jpeg));
    const auto box = RotateBox({rx1, ry1, rx2, ry2}, crop_w, crop_h, angle);
    const Rgb avg = AverageAround(*rotated_crop, box[0], box[1], box[2], box[3]);
    FillInclusive(rotated_crop, box[0], box[1], box[2], box[3], avg);
    const double lum = 0.299 * avg.r + 0.587 * avg.g + 0.114 * avg.b;
    const Rgb ink = lum < 128 ? Rgb{255, 255, 255} : Rgb{0, 0, 0};
    DrawToken(rotated_crop, token, box[0], box[1], box[2] - box[0], box[3] - box[1], ink);
  }
  return tokens;
}

}  // namespace mineru::pipeline
