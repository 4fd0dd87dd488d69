// model/mrope.h — M-RoPE position ids (t, h, w) for mixed text/image sequences (Qwen2-VL).
//
// Text tokens: t = h = w = running index. An image of merged grid (T, H', W') whose pad run
// starts after position s-1 gets t = s + frame, h = s + row, w = s + col. Text after an image
// resumes at max(all previous ids) + 1. Decoding continues at max + 1 (next_position).
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "model/vision_encoder.h"

namespace mineru {

struct MropePositions {
  std::vector<int64_t> t, h, w;  // one entry per token
  int64_t next_position = 0;     // position of the first generated token
};

// ids: the prompt with each image already expanded to its T*H*W/merge^2 pad tokens.
// grids: the images' patch grids in order. Errors if the pad runs do not match the grids.
StatusOr<MropePositions> ComputeMropePositions(const std::vector<int32_t>& ids,
                                               const std::vector<ImageGrid>& grids, int merge_size,
                                               int32_t image_token_id);

}  // namespace mineru
