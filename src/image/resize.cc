// image/resize.cc — Pillow-compatible bicubic resampling, crop and right-angle rotation.
//
// The resampler follows the arithmetic of Pillow's libImaging/Resample.c (written from its
// documented behaviour): per output pixel a window of source pixels weighted by the cubic
// convolution kernel (a = -0.5) stretched by the downscale factor, weights normalized to sum 1,
// converted to signed 22-bit fixed point (round half away from zero), accumulated in int32 with a
// rounding bias of 2^21, and the result clamped to [0, 255] after an arithmetic shift.
#include "image/resize.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "base/check.h"

namespace mineru {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;

double BicubicKernel(double x) {
  constexpr double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

inline uint8_t Clip8(int32_t v) {
  int32_t s = v >> kPrecisionBits;  // arithmetic shift (floor), as Pillow's lookup index
  return static_cast<uint8_t>(s < 0 ? 0 : (s > 255 ? 255 : s));
}

// Filter taps for one axis: output index i reads source [bounds[2i], bounds[2i] + bounds[2i+1])
// with weights kk[i * ksize + j].
struct Taps {
  int ksize = 0;
  std::vector<int> bounds;
  std::vector<int32_t> kk;
};

Taps PrecomputeTaps(int in_size, float in0, float in1, int out_size) {
  constexpr double kSupport = 2.0;
  Taps t;
  double scale = static_cast<double>(in1 - in0) / out_size;  // float subtraction, as Pillow
  double filterscale = scale < 1.0 ? 1.0 : scale;
  double support = kSupport * filterscale;
  t.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  t.bounds.resize(static_cast<size_t>(out_size) * 2);
  t.kk.assign(static_cast<size_t>(out_size) * t.ksize, 0);
  std::vector<double> w(t.ksize);
  for (int xx = 0; xx < out_size; ++xx) {
    double center = in0 + (xx + 0.5) * scale;
    double ww = 0.0;
    double ss = 1.0 / filterscale;
    int xmin = static_cast<int>(center - support + 0.5);  // truncation toward zero, as Pillow
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    if (xmax > t.ksize) xmax = t.ksize;  // cannot happen; keeps the buffer safe regardless
    if (xmax < 0) xmax = 0;
    for (int x = 0; x < xmax; ++x) {
      double v = BicubicKernel((x + xmin - center + 0.5) * ss);
      w[x] = v;
      ww += v;
    }
    int32_t* k = &t.kk[static_cast<size_t>(xx) * t.ksize];
    for (int x = 0; x < xmax; ++x) {
      double v = ww != 0.0 ? w[x] / ww : w[x];
      double f = v * (1 << kPrecisionBits);
      k[x] = static_cast<int32_t>(v < 0 ? -0.5 + f : 0.5 + f);
    }
    t.bounds[2 * xx] = xmin;
    t.bounds[2 * xx + 1] = xmax;
  }
  return t;
}

// out: out_w x rows; reads source rows [row_offset, row_offset + rows).
void HorizontalPass(const uint8_t* src, int src_w, int row_offset, int rows, const Taps& t, int out_w,
                    uint8_t* out) {
  const size_t src_stride = static_cast<size_t>(src_w) * 3;
  const size_t out_stride = static_cast<size_t>(out_w) * 3;
  for (int yy = 0; yy < rows; ++yy) {
    const uint8_t* in_row = src + static_cast<size_t>(yy + row_offset) * src_stride;
    uint8_t* out_row = out + static_cast<size_t>(yy) * out_stride;
    for (int xx = 0; xx < out_w; ++xx) {
      const int xmin = t.bounds[2 * xx];
      const int n = t.bounds[2 * xx + 1];
      const int32_t* k = &t.kk[static_cast<size_t>(xx) * t.ksize];
      int32_t s0 = 1 << (kPrecisionBits - 1), s1 = s0, s2 = s0;
      const uint8_t* p = in_row + static_cast<size_t>(xmin) * 3;
      for (int x = 0; x < n; ++x, p += 3) {
        s0 += p[0] * k[x];
        s1 += p[1] * k[x];
        s2 += p[2] * k[x];
      }
      out_row[3 * xx + 0] = Clip8(s0);
      out_row[3 * xx + 1] = Clip8(s1);
      out_row[3 * xx + 2] = Clip8(s2);
    }
  }
}

// out: w x out_h; source rows are read from bounds directly (already shifted by the caller).
void VerticalPass(const uint8_t* src, int w, const Taps& t, int out_h, uint8_t* out) {
  const size_t stride = static_cast<size_t>(w) * 3;
  std::vector<int32_t> acc(stride);
  for (int yy = 0; yy < out_h; ++yy) {
    const int ymin = t.bounds[2 * yy];
    const int n = t.bounds[2 * yy + 1];
    const int32_t* k = &t.kk[static_cast<size_t>(yy) * t.ksize];
    std::fill(acc.begin(), acc.end(), 1 << (kPrecisionBits - 1));
    // Row-outer accumulation: same integer sums as Pillow's per-pixel loop (addition in int32
    // is exact here, the order does not matter), but cache friendly.
    for (int y = 0; y < n; ++y) {
      const uint8_t* in_row = src + static_cast<size_t>(ymin + y) * stride;
      const int32_t ky = k[y];
      for (size_t i = 0; i < stride; ++i) acc[i] += in_row[i] * ky;
    }
    uint8_t* out_row = out + static_cast<size_t>(yy) * stride;
    for (size_t i = 0; i < stride; ++i) out_row[i] = Clip8(acc[i]);
  }
}

}  // namespace

RgbImage ResizeBicubicBox(const RgbImage& src, int out_w, int out_h, float x0, float y0, float x1, float y1) {
  MINERU_CHECK(src.width > 0 && src.height > 0);
  MINERU_CHECK(src.pixels.size() == static_cast<size_t>(src.width) * src.height * 3);
  MINERU_CHECK(out_w > 0 && out_h > 0);
  MINERU_CHECK(x0 >= 0 && y0 >= 0 && x1 >= x0 && y1 >= y0);
  MINERU_CHECK(x1 <= src.width && y1 <= src.height);

  // Pillow: a plain copy when nothing changes.
  if (out_w == src.width && out_h == src.height && x0 == 0 && y0 == 0 && x1 == src.width &&
      y1 == src.height) {
    return src;
  }
  // Pillow compares box[2]/box[3] with the *output* size here (not the input size).
  const bool need_horizontal = out_w != src.width || x0 != 0 || x1 != out_w;
  const bool need_vertical = out_h != src.height || y0 != 0 || y1 != out_h;

  Taps vert = PrecomputeTaps(src.height, y0, y1, out_h);
  const int ybox_first = vert.bounds[0];
  const int ybox_last = vert.bounds[2 * out_h - 2] + vert.bounds[2 * out_h - 1];

  RgbImage cur_holder;
  const RgbImage* cur = &src;
  if (need_horizontal) {
    Taps horiz = PrecomputeTaps(src.width, x0, x1, out_w);
    for (int i = 0; i < out_h; ++i) vert.bounds[2 * i] -= ybox_first;
    cur_holder.width = out_w;
    cur_holder.height = ybox_last - ybox_first;
    cur_holder.pixels.resize(static_cast<size_t>(cur_holder.width) * cur_holder.height * 3);
    HorizontalPass(src.pixels.data(), src.width, ybox_first, cur_holder.height, horiz, out_w,
                   cur_holder.pixels.data());
    cur = &cur_holder;
  }
  if (need_vertical) {
    RgbImage out;
    out.width = cur->width;
    out.height = out_h;
    out.pixels.resize(static_cast<size_t>(out.width) * out_h * 3);
    VerticalPass(cur->pixels.data(), cur->width, vert, out_h, out.pixels.data());
    return out;
  }
  if (cur == &src) return src;
  return cur_holder;
}

RgbImage ResizeBicubic(const RgbImage& src, int out_w, int out_h) {
  return ResizeBicubicBox(src, out_w, out_h, 0.0f, 0.0f, static_cast<float>(src.width),
                          static_cast<float>(src.height));
}

RgbImage Crop(const RgbImage& src, int x0, int y0, int x1, int y1) {
  MINERU_CHECK(src.pixels.size() == static_cast<size_t>(src.width) * src.height * 3);
  const int64_t w64 = std::max<int64_t>(0, int64_t{x1} - x0), h64 = std::max<int64_t>(0, int64_t{y1} - y0);
  MINERU_CHECK(w64 <= std::numeric_limits<int>::max() && h64 <= std::numeric_limits<int>::max());
  RgbImage out;
  out.width = static_cast<int>(w64);
  out.height = static_cast<int>(h64);
  out.pixels.assign(static_cast<size_t>(out.width) * out.height * 3, 0);
  // Intersection of the crop rectangle with the source, in source coordinates.
  const int sx0 = std::max(x0, 0), sy0 = std::max(y0, 0);
  const int sx1 = static_cast<int>(std::min<int64_t>(int64_t{x0} + out.width, src.width));
  const int sy1 = static_cast<int>(std::min<int64_t>(int64_t{y0} + out.height, src.height));
  if (sx1 <= sx0 || sy1 <= sy0) return out;
  const size_t n = static_cast<size_t>(sx1 - sx0) * 3;
  for (int y = sy0; y < sy1; ++y) {
    const uint8_t* s = &src.pixels[(static_cast<size_t>(y) * src.width + sx0) * 3];
    uint8_t* d = &out.pixels[(static_cast<size_t>(y - y0) * out.width + (sx0 - x0)) * 3];
    std::memcpy(d, s, n);
  }
  return out;
}

RgbImage Rotate90s(const RgbImage& src, int angle_ccw) {
  MINERU_CHECK(src.pixels.size() == static_cast<size_t>(src.width) * src.height * 3);
  int a = angle_ccw % 360;
  if (a < 0) a += 360;
  MINERU_CHECK(a % 90 == 0);
  if (a == 0) return src;
  const int w = src.width, h = src.height;
  RgbImage out;
  out.width = (a == 180) ? w : h;
  out.height = (a == 180) ? h : w;
  out.pixels.resize(src.pixels.size());
  for (int y = 0; y < out.height; ++y) {
    for (int x = 0; x < out.width; ++x) {
      int sx, sy;
      if (a == 90) {  // PIL ROTATE_90 (counter-clockwise): top-right corner goes to top-left
        sx = w - 1 - y;
        sy = x;
      } else if (a == 180) {
        sx = w - 1 - x;
        sy = h - 1 - y;
      } else {  // 270 ccw == 90 clockwise (PIL ROTATE_270): bottom-left goes to top-left
        sx = y;
        sy = h - 1 - x;
      }
      const uint8_t* s = &src.pixels[(static_cast<size_t>(sy) * w + sx) * 3];
      uint8_t* d = &out.pixels[(static_cast<size_t>(y) * out.width + x) * 3];
      d[0] = s[0];
      d[1] = s[1];
      d[2] = s[2];
    }
  }
  return out;
}

}  // namespace mineru
