// image/decode.cc — format detection and shared helpers for the decoders.
#include "image/decode.h"

#include <cstring>
#include <limits>
#include <new>

#include "base/mapped_file.h"
#include "image/codecs_internal.h"

namespace mineru {
namespace image_internal {

Status CheckClaimedSize(int64_t width, int64_t height, const DecodeLimits& limits, const char* format) {
  if (width <= 0 || height <= 0) {
    return DataLossError(std::string(format) + ": invalid image size " + std::to_string(width) + "x" +
                         std::to_string(height) + " in header");
  }
  // Sides beyond 2^28 cannot be represented safely (int width, width*height*4 byte counts).
  constexpr int64_t kMaxSide = int64_t(1) << 28;
  const bool side_too_big = width > kMaxSide || height > kMaxSide;
  const int64_t pixels = side_too_big ? std::numeric_limits<int64_t>::max() : width * height;
  if (side_too_big || pixels > limits.max_pixels) {
    return ResourceExhaustedError(
        std::string(format) + ": image size " + std::to_string(width) + "x" + std::to_string(height) + " (" +
        (side_too_big ? std::string("too many") : std::to_string(pixels)) +
        " pixels) exceeds the decode limit of " + std::to_string(limits.max_pixels) + " pixels");
  }
  return Status::Ok();
}

Status AllocateImage(int width, int height, RgbImage* out) {
  try {
    out->pixels.resize(static_cast<size_t>(width) * height * 3);
  } catch (const std::bad_alloc&) {
    return OutOfMemoryError("decoding a " + std::to_string(width) + "x" + std::to_string(height) +
                            " image (" + std::to_string(static_cast<size_t>(width) * height * 3 >> 20) +
                            " MB of pixels)");
  }
  out->width = width;
  out->height = height;
  return Status::Ok();
}

}  // namespace image_internal

StatusOr<RgbImage> DecodeImage(const uint8_t* data, size_t size, const DecodeLimits& limits) {
  using namespace image_internal;
  if (data == nullptr || size == 0) return InvalidArgumentError("empty image data");
  static const uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (size >= 8 && std::memcmp(data, kPng, 8) == 0) return DecodePng(data, size, limits);
  if (size >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff) {
    return DecodeJpeg(data, size, limits);
  }
  if (size >= 12 && std::memcmp(data, "RIFF", 4) == 0 && std::memcmp(data + 8, "WEBP", 4) == 0) {
    return DecodeWebp(data, size, limits);
  }
  if (size >= 4 && ((data[0] == 'I' && data[1] == 'I' && (data[2] == 42 || data[2] == 43) && data[3] == 0) ||
                    (data[0] == 'M' && data[1] == 'M' && data[2] == 0 && (data[3] == 42 || data[3] == 43)))) {
    return DecodeTiff(data, size, limits);
  }
  return InvalidArgumentError("unsupported image format (expected PNG, JPEG, WebP or TIFF)");
}

StatusOr<RgbImage> DecodeImageFile(const std::string& path, const DecodeLimits& limits) {
  MINERU_ASSIGN_OR_RETURN(auto file, MappedFile::Open(path));
  auto img = DecodeImage(file->data(), file->size(), limits);
  if (!img.ok()) return img.status().WithPrefix(path);
  // Shrunk while it was read: the lost pages read as zeros (base/mapped_file.h).
  Status same = file->CheckUnchanged();
  if (!same.ok()) return DataLossError(path + " changed while it was read: " + same.message());
  return img;
}

}  // namespace mineru
