// image/webp.cc — WebP decoding with libwebp (still images) and libwebpdemux (first frame of an
// animation). Alpha is dropped, as Pillow's convert("RGB") does.
#include <webp/decode.h>
#include <webp/demux.h>

#include <cstring>
#include <string>

#include "image/codecs_internal.h"

namespace mineru {
namespace image_internal {

StatusOr<RgbImage> DecodeWebp(const uint8_t* data, size_t size, const DecodeLimits& limits) {
  WebPBitstreamFeatures features;
  const VP8StatusCode st = WebPGetFeatures(data, size, &features);
  if (st != VP8_STATUS_OK) {
    return DataLossError("webp: cannot read header (status " + std::to_string(static_cast<int>(st)) + ")");
  }
  if (!features.has_animation) {
    MINERU_RETURN_IF_ERROR(CheckClaimedSize(features.width, features.height, limits, "webp"));
    RgbImage img;
    MINERU_RETURN_IF_ERROR(AllocateImage(features.width, features.height, &img));
    const int stride = features.width * 3;
    if (WebPDecodeRGBInto(data, size, img.pixels.data(), img.pixels.size(), stride) == nullptr) {
      return DataLossError("webp: corrupt or truncated data");
    }
    return img;
  }

  // Animated: the first frame as WebPAnimDecoder reconstructs it (canvas-sized).
  WebPData wd;
  wd.bytes = data;
  wd.size = size;
  WebPAnimDecoderOptions opts;
  if (!WebPAnimDecoderOptionsInit(&opts)) return InternalError("webp: decoder version mismatch");
  opts.color_mode = MODE_RGBA;
  opts.use_threads = 0;
  // The canvas size is in the VP8X chunk; check it before the decoder allocates the canvas.
  WebPDemuxer* demux = WebPDemux(&wd);
  if (demux == nullptr) return DataLossError("webp: corrupt animation container");
  const uint32_t cw = WebPDemuxGetI(demux, WEBP_FF_CANVAS_WIDTH);
  const uint32_t ch = WebPDemuxGetI(demux, WEBP_FF_CANVAS_HEIGHT);
  WebPDemuxDelete(demux);
  MINERU_RETURN_IF_ERROR(CheckClaimedSize(cw, ch, limits, "webp"));
  WebPAnimDecoder* dec = WebPAnimDecoderNew(&wd, &opts);
  if (dec == nullptr) return DataLossError("webp: cannot decode animation");
  struct Guard {
    WebPAnimDecoder* d;
    ~Guard() { WebPAnimDecoderDelete(d); }
  } guard{dec};
  WebPAnimInfo info;
  if (!WebPAnimDecoderGetInfo(dec, &info)) return DataLossError("webp: cannot read animation info");
  MINERU_RETURN_IF_ERROR(CheckClaimedSize(info.canvas_width, info.canvas_height, limits, "webp"));
  uint8_t* rgba = nullptr;
  int timestamp = 0;
  if (!WebPAnimDecoderGetNext(dec, &rgba, &timestamp) || rgba == nullptr) {
    return DataLossError("webp: cannot decode the first animation frame");
  }
  RgbImage img;
  MINERU_RETURN_IF_ERROR(
      AllocateImage(static_cast<int>(info.canvas_width), static_cast<int>(info.canvas_height), &img));
  const size_t n = static_cast<size_t>(img.width) * img.height;
  for (size_t i = 0; i < n; ++i) {
    img.pixels[3 * i] = rgba[4 * i];
    img.pixels[3 * i + 1] = rgba[4 * i + 1];
    img.pixels[3 * i + 2] = rgba[4 * i + 2];
  }
  return img;
}

}  // namespace image_internal
}  // namespace mineru
