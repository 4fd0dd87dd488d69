// pipeline/common/crop_geometry.cc — stage II crop arithmetic (see crop_geometry.h).
#include "pipeline/common/crop_geometry.h"

#include <algorithm>
#include <cfenv>
#include <cmath>

namespace mineru::pipeline {

namespace {

// Python round(x) for a float: nearest integer, ties to even, on the exact binary value.
// std::nearbyint does exactly that in the default rounding mode.
long long PyRound(double x) { return static_cast<long long>(std::nearbyint(x)); }

}  // namespace

PixelBox PillowCropBox(double x0, double y0, double x1, double y1) {
  return PixelBox{static_cast<int>(PyRound(x0)), static_cast<int>(PyRound(y0)), static_cast<int>(PyRound(x1)),
                  static_cast<int>(PyRound(y1))};
}

PixelBox StageTwoCropBox(double x1, double y1, double x2, double y2, int page_w, int page_h) {
  return PillowCropBox(x1 * page_w, y1 * page_h, x2 * page_w, y2 * page_h);
}

std::optional<ResizePlan> PlanResizeByNeed(int w, int h, int min_edge, double max_ratio, bool ceil_upscale) {
  if (w <= 0 || h <= 0) return std::nullopt;
  ResizePlan p;
  int cw = w, ch = h;
  const double edge_ratio = static_cast<double>(std::max(w, h)) / static_cast<double>(std::min(w, h));
  if (edge_ratio > max_ratio) {
    if (w > h) {
      p.pad_w = w;
      p.pad_h = static_cast<int>(std::ceil(static_cast<double>(w) / max_ratio));
    } else {
      p.pad_w = static_cast<int>(std::ceil(static_cast<double>(h) / max_ratio));
      p.pad_h = h;
    }
    p.pad = true;
    // int((new - old) / 2): true division then truncation; new >= old so this is a floor.
    p.paste_x = static_cast<int>(static_cast<double>(p.pad_w - w) / 2.0);
    p.paste_y = static_cast<int>(static_cast<double>(p.pad_h - h) / 2.0);
    cw = p.pad_w;
    ch = p.pad_h;
  }
  if (std::min(cw, ch) < min_edge) {
    const double scale = static_cast<double>(min_edge) / static_cast<double>(std::min(cw, ch));
    p.upscale = true;
    const double sw = cw * scale, sh = ch * scale;
    cw = static_cast<int>(ceil_upscale ? std::ceil(sw) : PyRound(sw));
    ch = static_cast<int>(ceil_upscale ? std::ceil(sh) : PyRound(sh));
  }
  p.out_w = cw;
  p.out_h = ch;
  return p;
}

CropPlan PlanBlockCrop(double x1, double y1, double x2, double y2, std::optional<int> angle, int page_w,
                       int page_h, bool ceil_upscale) {
  CropPlan plan;
  plan.box = StageTwoCropBox(x1, y1, x2, y2, page_w, page_h);
  int w = plan.box.width();
  int h = plan.box.height();
  if (angle && (*angle == 90 || *angle == 180 || *angle == 270)) plan.rotate_ccw = *angle;
  if (plan.rotate_ccw == 90 || plan.rotate_ccw == 270) std::swap(w, h);
  plan.rotated_w = w;
  plan.rotated_h = h;
  const auto resize = PlanResizeByNeed(w, h, 28, 50.0, ceil_upscale);
  if (!resize) {
    plan.empty = true;
  } else {
    plan.resize = *resize;
  }
  return plan;
}

PixelBox AssemblyCropBox(const int bbox_pt[4], double scale) {
  // int(bbox[i] * scale): truncation toward zero.
  return PixelBox{static_cast<int>(bbox_pt[0] * scale), static_cast<int>(bbox_pt[1] * scale),
                  static_cast<int>(bbox_pt[2] * scale), static_cast<int>(bbox_pt[3] * scale)};
}

PixelBox AssemblyCropBoxV34(const int bbox_pt[4], double scale) {
  const int x0 = static_cast<int>(std::floor(bbox_pt[0] * scale)),
            y0 = static_cast<int>(std::floor(bbox_pt[1] * scale));
  const int x1 = static_cast<int>(std::ceil(bbox_pt[2] * scale)),
            y1 = static_cast<int>(std::ceil(bbox_pt[3] * scale));
  if (x1 <= x0 || y1 <= y0) return PixelBox{0, 0, 0, 0};
  return PixelBox{x0, y0, x1, y1};
}

std::string AssemblyCropHashInput(std::string_view span_type, std::string_view page_img_md5, int page_idx,
                                  const int bbox_pt[4]) {
  std::string s;
  s.append(span_type);
  s += '/';
  s.append(page_img_md5);
  s += '_';
  s += std::to_string(page_idx);
  for (int k = 0; k < 4; ++k) {
    s += '_';
    s += std::to_string(bbox_pt[k]);
  }
  return s;
}

}  // namespace mineru::pipeline
