// libFuzzer target: the PNG/JPEG/WebP/TIFF decoders (small pixel limit to keep runs fast), then
// the preprocessing path on what decodes.
#include "image/decode.h"
#include "image/preprocess.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mineru::DecodeLimits limits;
  limits.max_pixels = 1 << 20;
  auto img = mineru::DecodeImage(data, size, limits);
  if (img.ok() && img->width * static_cast<int64_t>(img->height) <= 65536) {
    mineru::PreprocessConfig c;
    c.max_pixels = 28 * 28 * 16;
    (void)mineru::PreprocessImage(*img, c);
  }
  return 0;
}
