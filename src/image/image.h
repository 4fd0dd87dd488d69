// image/image.h — the in-memory image type shared by the image layer and its users.
#pragma once

#include <cstdint>
#include <vector>

namespace mineru {

// 8-bit RGB image. pixels holds width*height*3 bytes, RGB interleaved, row-major, no padding.
struct RgbImage {
  int width = 0, height = 0;
  std::vector<uint8_t> pixels;  // RGB interleaved, row-major
};

}  // namespace mineru
