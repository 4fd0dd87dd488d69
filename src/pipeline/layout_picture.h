// pipeline/layout_picture.h — a picture of a page with its layout boxes drawn over it: one colour
// per block type, the reading-order number in the box's corner.
#pragma once

#include <string>
#include <vector>

#include "image/image.h"
#include "pipeline/doc/blocks.h"

namespace mineru::pipeline {

// page: the full-resolution page; returns a copy scaled so its long side is at most max_side.
RgbImage DrawLayout(const RgbImage& page, const std::vector<LayoutBlock>& blocks, int max_side = 1600);

}  // namespace mineru::pipeline
