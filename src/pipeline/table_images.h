// pipeline/table_images.h — images inside a table, as mineru-vl-utils 1.2.1 handles them
// (table_image_processor.mask_and_encode_table_image): each image's area in the (rotated) table crop
// is filled with the average colour around it and labelled with a token "[XXXX]"; the table model
// copies the token into its output, and post-processing puts the image back as
// <img src="data:image/jpeg;base64,..."/>.
//
// Differences from 1.2.1, on purpose: tokens are deterministic (1.2.1 draws them at random from
// "ACDGHKTWXYZ2345678"; ours come from the table's layout index and the image's rank, same alphabet
// and length) and the token is drawn with a built-in 5x7 bitmap font scaled to at most 70% of the box
// (1.2.1 uses a TrueType font). JPEG bytes come from our encoder (quality 75, Pillow's default).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "image/image.h"
#include "pipeline/doc/blocks.h"

namespace mineru::pipeline {

// "[XXXX]" for the k-th image (0-based) of the table at layout index `table_index`.
std::string TableImageToken(size_t table_index, size_t k);

// Masks the images in `rotated_crop` (the table crop of `page`, already rotated by the table's
// angle; `crop_w` x `crop_h` is its size before rotation) and returns their tokens with data URIs.
TableImageTokens MaskTableImages(const RgbImage& page, const LayoutBlock& table, size_t table_index,
                                 const std::vector<const LayoutBlock*>& images, int crop_w, int crop_h,
                                 RgbImage* rotated_crop);

}  // namespace mineru::pipeline
