// model/flops.h — the work of the model's computations in floating-point operations (2 per
// multiply-add), counted as the vision encoder's profile counts it (model/op_profile.h): the
// matrix products and the attention; norms and element-wise ops count 0. What achieved TFLOP/s
// figures divide.
#pragma once

#include <cstdint>

#include "model/config.h"
#include "model/vision_encoder.h"

namespace mineru {

// The ViT and merger on one image of grid g (attention within each of its frames).
double VisionFlops(const VisionConfig& v, const ImageGrid& g);

// The decoder on n new tokens of one sequence after `past` cached ones: every layer's products
// for each token and its attention over past + its own position (Q K^T and P V); without the LM
// head.
double DecoderFlops(const TextConfig& t, int64_t past, int64_t n);

// The LM head on one row.
double LmHeadFlops(const TextConfig& t);

}  // namespace mineru
