// image/preprocess.h — Qwen2-VL image preprocessing (smart_resize, rescale, normalize, patchify).
//
// Reproduces transformers 5.17 `smart_resize` and the classic (Pillow) Qwen2-VL image processor:
// Pillow bicubic resize, x * float32(1/255), (x - mean) / std in float32, the frame repeated
// temporal_patch_size times, then patches in the order the vision tower expects.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "base/status.h"
#include "image/image.h"

namespace mineru {

// transformers `smart_resize(height, width, factor, min_pixels, max_pixels)` -> (h, w), exactly:
// Python round-half-to-even of height/factor, the max_pixels branch floors (at least `factor`),
// the min_pixels branch ceils. Tiny images are scaled up (1x1 -> 56x56 for min 3136); an aspect
// ratio above 200 is an InvalidArgument error whose message is Python's
// "absolute aspect ratio must be smaller than 200, got 300.0".
StatusOr<std::pair<int, int>> SmartResize(int64_t height, int64_t width, int factor, int64_t min_pixels,
                                          int64_t max_pixels);

struct PreprocessConfig {
  int64_t min_pixels = 3136, max_pixels = 1605632;
  int patch_size = 14, merge_size = 2, temporal_patch_size = 2;
  float image_mean[3] = {0.48145466f, 0.4578275f, 0.40821073f};
  float image_std[3] = {0.26862954f, 0.26130258f, 0.27577711f};
  float rescale_factor = 1.0f / 255;
  // Policy for user-supplied images (checked by PreprocessImage, not by SmartResize):
  // sides below min_input_side or more than max_input_pixels pixels are rejected.
  int min_input_side = 10;
  int64_t max_input_pixels = 178956970;
};

struct PixelValues {
  std::vector<float> data;  // [num_patches, patch_dim]
  int num_patches = 0, patch_dim = 0, grid_t = 0, grid_h = 0, grid_w = 0;
};

// smart_resize -> Pillow bicubic (skipped when the size is unchanged) -> rescale/normalize ->
// patchify: rows ordered (t, h/merge, w/merge, merge_h, merge_w), each row [C, T, patch, patch]
// with patch_dim = 3 * temporal_patch_size * patch_size^2. grid = (1, h/patch, w/patch).
StatusOr<PixelValues> PreprocessImage(const RgbImage& image, const PreprocessConfig& config);

}  // namespace mineru
