// image/decode.h — decoding PNG / JPEG / WebP / TIFF to RGB, and encoding PNG / JPEG.
//
// Decoding reproduces what Pillow gives for `Image.open(f).convert("RGB")`:
//  - grayscale is replicated to R=G=B; 1/2/4-bit grayscale is scaled (x255, x85, x17);
//  - gray+alpha and RGBA drop the alpha channel (no compositing onto a background);
//  - palette images are mapped through the palette (a tRNS chunk is ignored);
//  - 16-bit PNG: RGB/RGBA/gray+alpha keep the high byte of each sample, 16-bit grayscale is
//    clipped to 255 (Pillow's "I;16" -> "RGB" conversion saturates instead of scaling);
//  - CMYK JPEG is read as Adobe-inverted CMYK (Pillow always assumes this) and converted with
//    Pillow's formula R = (255-K') - (C'*(255-K')+128 rounded /255), C' = 255 - stored C, etc.;
//  - EXIF / TIFF orientation tags are NOT applied (Pillow's open/convert does not either);
//  - animated PNG / WebP and multi-page TIFF give the first frame / page.
// The pixel count claimed by the header is checked against DecodeLimits before any pixel buffer
// is allocated. Corrupt or truncated data yields an error Status, never a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"
#include "image/image.h"

namespace mineru {

struct DecodeLimits {
  int64_t max_pixels = 178956970;  // Pillow's decompression-bomb limit (2 * MAX_IMAGE_PIXELS)
};

// Format is chosen from the magic bytes. Errors:
//  InvalidArgument  — empty input or an unsupported format ("unsupported image format ...");
//  ResourceExhausted — the header claims more than limits.max_pixels pixels;
//  OutOfMemory      — the pixels (within the limit) could not be allocated;
//  DataLoss         — corrupt or truncated data, or a header with a zero/negative size.
StatusOr<RgbImage> DecodeImage(const uint8_t* data, size_t size, const DecodeLimits& limits = {});
StatusOr<RgbImage> DecodeImageFile(const std::string& path, const DecodeLimits& limits = {});

// PNG, 8-bit RGB, zlib level 6, no interlace.
Status EncodePng(const RgbImage& image, std::string* out);
Status WritePngFile(const RgbImage& image, const std::string& path);
// Baseline JPEG, 4:2:0, quality clamped to [1, 100].
Status EncodeJpeg(const RgbImage& image, std::string* out, int quality = 90);
Status WriteJpegFile(const RgbImage& image, const std::string& path, int quality = 90);

}  // namespace mineru
