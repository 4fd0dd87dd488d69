// pipeline/common/crop_geometry.h — the pixel arithmetic of stage II crops and of MinerU's saved crops.
//
// Pure numbers: the caller (the model-driven part of the pipeline) applies them to pixels.
// References: mineru-vl-utils 0.1.x `prepare_for_extract` + `resize_by_need`; Pillow `Image.crop`
// (float boxes go through `map(int, map(round, box))`, i.e. round-half-to-even) and `Image.rotate`
// (90/180/270 with expand=True are exact transposes); MinerU 2.5.4 `pdf_image_tools.cut_image`.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace mineru::pipeline {

struct PixelBox {
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // half-open: columns x0..x1-1, rows y0..y1-1
  int width() const { return x1 - x0; }
  int height() const { return y1 - y0; }
};

// Pillow's rounding of a float crop box: each coordinate rounded half-to-even (Python round()).
PixelBox PillowCropBox(double x0, double y0, double x1, double y1);

// The stage II crop of a 0..1 box on a page image of page_w x page_h pixels:
// PillowCropBox(x1*W, y1*H, x2*W, y2*H).
PixelBox StageTwoCropBox(double x1, double y1, double x2, double y2, int page_w, int page_h);

// What resize_by_need does to an image of w x h (after rotation), as numbers.
struct ResizePlan {
  // Step 1, when max(w,h)/min(w,h) > max_ratio: a white canvas of pad_w x pad_h (short side
  // becomes ceil(long/max_ratio)) with the image pasted at (paste_x, paste_y) = int((new-old)/2).
  bool pad = false;
  int pad_w = 0, pad_h = 0;
  int paste_x = 0, paste_y = 0;
  // Step 2, when the (padded) short edge < min_edge: BICUBIC resize to out_w x out_h, each side
  // round(side * min_edge / short) (Python round, half-to-even) in 0.1.x; math.ceil in 1.2.1
  // (ceil_upscale).
  bool upscale = false;
  // Final size (equals the padded or input size when there is no upscale).
  int out_w = 0, out_h = 0;
};

// Returns nullopt for an empty image (w or h <= 0): the reference divides by zero there.
std::optional<ResizePlan> PlanResizeByNeed(int w, int h, int min_edge = 28, double max_ratio = 50.0,
                                           bool ceil_upscale = false);

// The whole stage II geometry of one block.
struct CropPlan {
  PixelBox box;        // crop from the full page image (white/black fill never needed: inside page)
  int rotate_ccw = 0;  // 0, 90, 180 or 270: PIL rotate(angle, expand=True), counter-clockwise
  int rotated_w = 0, rotated_h = 0;
  ResizePlan resize;   // applied to the rotated crop
  bool empty = false;  // crop has no pixels: the reference would fail on it; callers skip the block
};

CropPlan PlanBlockCrop(double x1, double y1, double x2, double y2, std::optional<int> angle, int page_w,
                       int page_h, bool ceil_upscale = false);

// MinerU assembly crops (images/ of the output): the span bbox is in PDF points (ints), the page
// image was rendered with `scale` pixels per point (200/72 at 200 DPI, smaller when the long side was
// capped); the pixel box is int(v * scale) per coordinate (truncation), passed to PIL crop.
PixelBox AssemblyCropBox(const int bbox_pt[4], double scale);

// MinerU 3.4.4 (get_crop_img -> bbox_utils.normalize_to_int_bbox): floor(x0*s), floor(y0*s),
// ceil(x1*s), ceil(y1*s); an empty box (x1 <= x0 or y1 <= y0) becomes {0, 0, 0, 0}.
PixelBox AssemblyCropBoxV34(const int bbox_pt[4], double scale);

// The string whose SHA-256 hex digest + ".jpg" names an assembly crop:
//   f"{span_type}/{page_img_md5}_{page_idx}_{x0}_{y0}_{x1}_{y1}"
// span_type is "image", "table" or "interline_equation"; page_img_md5 is the md5 hex of the page
// image's raw RGB bytes (PIL tobytes()); bbox in points.
std::string AssemblyCropHashInput(std::string_view span_type, std::string_view page_img_md5, int page_idx,
                                  const int bbox_pt[4]);

}  // namespace mineru::pipeline
