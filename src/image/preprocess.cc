// image/preprocess.cc — transformers' Qwen2-VL smart_resize and the classic image processor.
#include "image/preprocess.h"

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

#include "image/resize.h"

namespace mineru {
namespace {

// Python's repr(float): the shortest decimal that round-trips, fixed notation for exponents in
// [-4, 16), scientific otherwise ("1e+16", "1.5e-05"), and ".0" on integral values.
std::string PyFloatRepr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  char buf[64];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*e", prec - 1, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s(buf);
  std::string sign;
  if (s[0] == '-') {
    sign = "-";
    s.erase(0, 1);
  }
  const size_t e = s.find('e');
  const int exp10 = std::atoi(s.c_str() + e + 1);
  std::string digits;
  for (size_t i = 0; i < e; ++i) {
    if (s[i] != '.') digits += s[i];
  }
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out;
  if (exp10 >= -4 && exp10 < 16) {
    if (exp10 >= 0) {
      std::string ip = digits.substr(0, std::min(digits.size(), static_cast<size_t>(exp10) + 1));
      while (ip.size() < static_cast<size_t>(exp10) + 1) ip += '0';
      std::string fp = digits.size() > static_cast<size_t>(exp10) + 1 ? digits.substr(exp10 + 1) : "0";
      out = ip + "." + fp;
    } else {
      out = "0." + std::string(-exp10 - 1, '0') + digits;
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
    out += eb;
  }
  return sign + out;
}

// Python round() on a float: round half to even (the default FE_TONEAREST mode).
double PyRound(double x) {
  const int old = std::fegetround();
  if (old != FE_TONEAREST) std::fesetround(FE_TONEAREST);
  const double r = std::nearbyint(x);
  if (old != FE_TONEAREST) std::fesetround(old);
  return r;
}

}  // namespace

StatusOr<std::pair<int, int>> SmartResize(int64_t height, int64_t width, int factor, int64_t min_pixels,
                                          int64_t max_pixels) {
  if (factor <= 0) return InvalidArgumentError("smart_resize: factor must be positive");
  if (height <= 0 || width <= 0) {
    return InvalidArgumentError("smart_resize: image size must be positive, got " + std::to_string(height) +
                                "x" + std::to_string(width));
  }
  constexpr int64_t kMaxSide = std::numeric_limits<int32_t>::max();
  if (height > kMaxSide || width > kMaxSide) {
    return InvalidArgumentError("smart_resize: image side too large");
  }
  const double h = static_cast<double>(height), w = static_cast<double>(width);
  const double ratio =
      static_cast<double>(std::max(height, width)) / static_cast<double>(std::min(height, width));
  if (ratio > 200) {
    return InvalidArgumentError("absolute aspect ratio must be smaller than 200, got " + PyFloatRepr(ratio));
  }
  const double f = factor;
  double h_bar = PyRound(h / f) * f;
  double w_bar = PyRound(w / f) * f;
  // Python ints: h*w is exact, then converted to float for the true division.
  const double hw = static_cast<double>(height * width);
  if (h_bar * w_bar > static_cast<double>(max_pixels)) {
    const double beta = std::sqrt(hw / static_cast<double>(max_pixels));
    h_bar = std::max(f, std::floor(h / beta / f) * f);
    w_bar = std::max(f, std::floor(w / beta / f) * f);
  } else if (h_bar * w_bar < static_cast<double>(min_pixels)) {
    const double beta = std::sqrt(static_cast<double>(min_pixels) / hw);
    h_bar = std::ceil(h * beta / f) * f;
    w_bar = std::ceil(w * beta / f) * f;
  }
  if (!(h_bar >= 1 && w_bar >= 1 && h_bar <= kMaxSide && w_bar <= kMaxSide)) {
    return InvalidArgumentError("smart_resize: resulting size out of range");
  }
  return std::make_pair(static_cast<int>(h_bar), static_cast<int>(w_bar));
}

namespace {

// The processor's settings and the image checked before any work: sizes positive and
// consistent, the image within min_input_side and max_input_pixels.
Status CheckPreprocessInput(const RgbImage& image, const PreprocessConfig& cfg) {
  if (cfg.patch_size <= 0 || cfg.merge_size <= 0 || cfg.temporal_patch_size <= 0) {
    return InvalidArgumentError(
        "preprocess: patch_size, merge_size and temporal_patch_size must be positive");
  }
  if (cfg.min_pixels < 0 || cfg.max_pixels <= 0 || cfg.min_pixels > cfg.max_pixels) {
    return InvalidArgumentError("preprocess: invalid min_pixels/max_pixels");
  }
  if (image.width <= 0 || image.height <= 0 ||
      image.pixels.size() != static_cast<size_t>(image.width) * image.height * 3) {
    return InvalidArgumentError("preprocess: empty or malformed image");
  }
  if (image.width < cfg.min_input_side || image.height < cfg.min_input_side) {
    return InvalidArgumentError("image too small: " + std::to_string(image.width) + "x" +
                                std::to_string(image.height) + ", each side must be at least " +
                                std::to_string(cfg.min_input_side) + " px");
  }
  const int64_t npix = static_cast<int64_t>(image.width) * image.height;
  if (npix > cfg.max_input_pixels) {
    return ResourceExhaustedError("image too large: " + std::to_string(image.width) + "x" +
                                  std::to_string(image.height) + " = " + std::to_string(npix) +
                                  " pixels exceeds the limit of " + std::to_string(cfg.max_input_pixels));
  }
  return Status::Ok();
}

// Normalized value per byte value and channel: float32((float32(v) * scale - mean) / std).
// The image has only 256 distinct values per channel, so a table is exact and cheap.
void FillNormTable(const PreprocessConfig& cfg, float table[3][256]) {
  const float scale = cfg.rescale_factor;
  for (int c = 0; c < 3; ++c) {
    for (int v = 0; v < 256; ++v) {
      volatile float a = static_cast<float>(v) * scale;  // no FMA contraction across these steps
      volatile float d = a - cfg.image_mean[c];
      table[c][v] = d / cfg.image_std[c];
    }
  }
}

// Writes the normalized patches of an RGB8 image `rw` pixels wide (covering gh*p rows, gw*p
// columns; gh, gw multiples of m) into pv->data, which holds gh*gw rows of 3*tps*p*p floats. Row r = ((bh *
// (gw/m) + bw) * m + mh)
// * m + mw; column ((c * tps + t) * p + py) * p + px.
void Patchify(const uint8_t* px, int rw, int gh, int gw, int p, int m, int tps, const float table[3][256],
              PixelValues* pv) {
  const int patch_dim = pv->patch_dim;
  const int bw_n = gw / m;
  const size_t stride = static_cast<size_t>(rw) * 3;
  for (int bh = 0; bh < gh / m; ++bh) {
    for (int bw = 0; bw < bw_n; ++bw) {
      for (int mh = 0; mh < m; ++mh) {
        for (int mw = 0; mw < m; ++mw) {
          const size_t r = ((static_cast<size_t>(bh) * bw_n + bw) * m + mh) * m + mw;
          float* row = &pv->data[r * patch_dim];
          const int y0 = (bh * m + mh) * p, x0 = (bw * m + mw) * p;
          for (int c = 0; c < 3; ++c) {
            float* dst0 = row + static_cast<size_t>(c) * tps * p * p;
            for (int py = 0; py < p; ++py) {
              const uint8_t* src =
                  px + static_cast<size_t>(y0 + py) * stride + static_cast<size_t>(x0) * 3 + c;
              float* dst = dst0 + static_cast<size_t>(py) * p;
              for (int q = 0; q < p; ++q) dst[q] = table[c][src[3 * q]];
            }
            // The frame is repeated temporal_patch_size times.
            for (int t = 1; t < tps; ++t) {
              std::copy(dst0, dst0 + p * p, dst0 + static_cast<size_t>(t) * p * p);
            }
          }
        }
      }
    }
  }
}

}  // namespace

StatusOr<PixelValues> PreprocessImage(const RgbImage& image, const PreprocessConfig& cfg) {
  MINERU_RETURN_IF_ERROR(CheckPreprocessInput(image, cfg));
  const int p = cfg.patch_size, m = cfg.merge_size, tps = cfg.temporal_patch_size;
  MINERU_ASSIGN_OR_RETURN(auto hw,
                          SmartResize(image.height, image.width, p * m, cfg.min_pixels, cfg.max_pixels));
  const int rh = hw.first, rw = hw.second;

  RgbImage resized_holder;
  const RgbImage* im = &image;
  if (rw != image.width || rh != image.height) {
    resized_holder = ResizeBicubic(image, rw, rh);
    im = &resized_holder;
  }

  const int gh = rh / p, gw = rw / p;
  const int patch_dim = 3 * tps * p * p;
  const int64_t num_patches = static_cast<int64_t>(gh) * gw;  // grid_t = 1 for one image
  PixelValues pv;
  pv.num_patches = static_cast<int>(num_patches);
  pv.patch_dim = patch_dim;
  pv.grid_t = 1;
  pv.grid_h = gh;
  pv.grid_w = gw;
  pv.data.resize(static_cast<size_t>(num_patches) * patch_dim);

  float table[3][256];
  FillNormTable(cfg, table);
  Patchify(im->pixels.data(), rw, gh, gw, p, m, tps, table, &pv);
  return pv;
}

}  // namespace mineru
