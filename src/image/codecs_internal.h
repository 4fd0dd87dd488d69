// image/codecs_internal.h — per-format decoders behind DecodeImage (internal to mineru_image).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"
#include "image/decode.h"
#include "image/image.h"

namespace mineru {
namespace image_internal {

// Validates the size claimed by a header before anything is allocated: DataLoss for a
// non-positive side, ResourceExhausted above limits.max_pixels (or beyond what fits in memory
// indices). `format` names the codec in the message.
Status CheckClaimedSize(int64_t width, int64_t height, const DecodeLimits& limits, const char* format);

// Allocates width*height*3 bytes for `out` (after CheckClaimedSize), reporting allocation failure
// as OutOfMemory instead of throwing.
Status AllocateImage(int width, int height, RgbImage* out);

StatusOr<RgbImage> DecodePng(const uint8_t* data, size_t size, const DecodeLimits& limits);
StatusOr<RgbImage> DecodeJpeg(const uint8_t* data, size_t size, const DecodeLimits& limits);
StatusOr<RgbImage> DecodeWebp(const uint8_t* data, size_t size, const DecodeLimits& limits);
StatusOr<RgbImage> DecodeTiff(const uint8_t* data, size_t size, const DecodeLimits& limits);

}  // namespace image_internal
}  // namespace mineru
