// image/jpeg.cc — JPEG decoding (as Pillow's convert("RGB")) and encoding, with libjpeg(-turbo).
//
// libjpeg reports fatal errors through error_exit, which we turn into a longjmp. As in png.cc,
// only plain functions without destructible locals call setjmp; buffers belong to the callers.
#include <cstddef>
#include <cstdio>
// jpeglib.h needs size_t and FILE declared first.
#include <jerror.h>
#include <jpeglib.h>

#include <csetjmp>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "image/codecs_internal.h"
#include "image/decode.h"

namespace mineru {
namespace image_internal {
namespace {

struct JpegErr {
  jpeg_error_mgr pub;
  jmp_buf jump;
  char msg[JMSG_LENGTH_MAX];
  bool premature_eof;
};

void JpegErrorExit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegErr*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->msg);
  std::longjmp(err->jump, 1);
}

void JpegEmitMessage(j_common_ptr cinfo, int level) {
  // Warnings (level -1) are tolerated, as Pillow does, except running out of data: Pillow raises
  // "image file is truncated" there, and libjpeg would silently pad the image.
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) {
    reinterpret_cast<JpegErr*>(cinfo->err)->premature_eof = true;
  }
}

struct JpegDecodeCtx {
  jpeg_decompress_struct cinfo;
  JpegErr err;
  jpeg_progress_mgr progress;
  bool created;
};

// A progressive JPEG may carry any number of scans (repeated ones are only a warning to libjpeg),
// and each re-decodes the whole image: a small file could hold a decoder for minutes. Real encoders
// write about 10; more than this is refused (libjpeg-turbo's advice for untrusted input).
constexpr int kMaxJpegScans = 100;

void JpegProgress(j_common_ptr cinfo) {
  if (!cinfo->is_decompressor) return;
  const int scan = reinterpret_cast<j_decompress_ptr>(cinfo)->input_scan_number;
  if (scan > kMaxJpegScans) {
    auto* err = reinterpret_cast<JpegErr*>(cinfo->err);
    std::snprintf(err->msg, sizeof err->msg, "more than %d scans", kMaxJpegScans);
    std::longjmp(err->jump, 1);  // as error_exit: into the setjmp of the running step
  }
}

bool JpegReadHeader(JpegDecodeCtx* ctx, const uint8_t* data, size_t size) {
  ctx->cinfo.err = jpeg_std_error(&ctx->err.pub);
  ctx->err.pub.error_exit = JpegErrorExit;
  ctx->err.pub.emit_message = JpegEmitMessage;
  ctx->err.premature_eof = false;
  ctx->err.msg[0] = 0;
  if (setjmp(ctx->err.jump)) return false;
  jpeg_create_decompress(&ctx->cinfo);
  ctx->created = true;
  ctx->progress.progress_monitor = JpegProgress;
  ctx->cinfo.progress = &ctx->progress;
  jpeg_mem_src(&ctx->cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&ctx->cinfo, TRUE);
  return true;
}

inline uint8_t MulDiv255(int a, int b) {
  const int t = a * b + 128;
  return static_cast<uint8_t>(((t >> 8) + t) >> 8);
}

// Pillow: "CMYK;I" unpacking (every sample inverted) followed by cmyk2rgb.
void CmykRowToRgb(const uint8_t* in, int w, uint8_t* out) {
  for (int x = 0; x < w; ++x, in += 4, out += 3) {
    const int c = 255 - in[0], m = 255 - in[1], y = 255 - in[2], k = 255 - in[3];
    const int nk = 255 - k;
    for (int i = 0; i < 3; ++i) {
      const int v = nk - MulDiv255(i == 0 ? c : (i == 1 ? m : y), nk);
      out[i] = static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
    }
  }
}

// Decodes all scanlines into `out`. `row` holds one output scanline of cinfo.output_components.
bool JpegReadPixels(JpegDecodeCtx* ctx, uint8_t* out, uint8_t* row) {
  if (setjmp(ctx->err.jump)) return false;
  jpeg_decompress_struct* ci = &ctx->cinfo;
  jpeg_start_decompress(ci);
  const int w = static_cast<int>(ci->output_width);
  const size_t stride = static_cast<size_t>(w) * 3;
  while (ci->output_scanline < ci->output_height) {
    const JDIMENSION y = ci->output_scanline;
    uint8_t* dst = out + y * stride;
    JSAMPROW rp = ci->out_color_space == JCS_RGB ? dst : row;
    if (jpeg_read_scanlines(ci, &rp, 1) != 1) {
      std::snprintf(ctx->err.msg, sizeof ctx->err.msg, "no scanline returned");
      return false;
    }
    if (ci->out_color_space == JCS_GRAYSCALE) {
      for (int x = 0; x < w; ++x) dst[3 * x] = dst[3 * x + 1] = dst[3 * x + 2] = row[x];
    } else if (ci->out_color_space == JCS_CMYK) {
      CmykRowToRgb(row, w, dst);
    }
  }
  // jpeg_finish_decompress is skipped: what follows the last scanline does not matter (Pillow).
  return true;
}

}  // namespace

StatusOr<RgbImage> DecodeJpeg(const uint8_t* data, size_t size, const DecodeLimits& limits) {
  JpegDecodeCtx* ctx = static_cast<JpegDecodeCtx*>(std::calloc(1, sizeof(JpegDecodeCtx)));
  if (ctx == nullptr) return OutOfMemoryError("(jpeg decoder)");
  struct Guard {
    JpegDecodeCtx* ctx;
    ~Guard() {
      if (ctx->created) jpeg_destroy_decompress(&ctx->cinfo);
      std::free(ctx);
    }
  } guard{ctx};

  if (!JpegReadHeader(ctx, data, size)) return DataLossError(std::string("jpeg: ") + ctx->err.msg);
  jpeg_decompress_struct* ci = &ctx->cinfo;
  MINERU_RETURN_IF_ERROR(CheckClaimedSize(ci->image_width, ci->image_height, limits, "jpeg"));
  // Pillow's modes: 1 component -> "L", 3 -> "RGB" (libjpeg converts YCbCr), 4 -> "CMYK"
  // (YCCK is turned into CMYK by libjpeg).
  switch (ci->num_components) {
    case 1:
      ci->out_color_space = JCS_GRAYSCALE;
      break;
    case 3:
      ci->out_color_space = JCS_RGB;
      break;
    case 4:
      ci->out_color_space = JCS_CMYK;
      break;
    default:
      return UnimplementedError("jpeg: unsupported number of components " +
                                std::to_string(ci->num_components));
  }
  RgbImage img;
  MINERU_RETURN_IF_ERROR(
      AllocateImage(static_cast<int>(ci->image_width), static_cast<int>(ci->image_height), &img));
  std::vector<uint8_t> row;
  try {
    row.resize(static_cast<size_t>(ci->image_width) * 4);
  } catch (const std::bad_alloc&) {
    return OutOfMemoryError("(jpeg decoder)");
  }
  if (!JpegReadPixels(ctx, img.pixels.data(), row.data())) {
    return DataLossError(std::string("jpeg: ") + ctx->err.msg);
  }
  if (ci->output_width != ci->image_width || ci->output_height != ci->image_height) {
    return DataLossError("jpeg: output size differs from header");
  }
  if (ctx->err.premature_eof) return DataLossError("jpeg: image file is truncated");
  return img;
}

// ---------------------------------------------------------------------------------------------
// Encoding

namespace {

struct JpegEncodeCtx {
  jpeg_compress_struct cinfo;
  JpegErr err;
  bool created;
  unsigned char* buf;
  unsigned long size;
  bool finished;
};

bool JpegEncodeAll(JpegEncodeCtx* ctx, const RgbImage* img, int quality) {
  ctx->cinfo.err = jpeg_std_error(&ctx->err.pub);
  ctx->err.pub.error_exit = JpegErrorExit;
  ctx->err.pub.emit_message = JpegEmitMessage;
  if (setjmp(ctx->err.jump)) return false;
  jpeg_create_compress(&ctx->cinfo);
  ctx->created = true;
  jpeg_mem_dest(&ctx->cinfo, &ctx->buf, &ctx->size);
  ctx->cinfo.image_width = static_cast<JDIMENSION>(img->width);
  ctx->cinfo.image_height = static_cast<JDIMENSION>(img->height);
  ctx->cinfo.input_components = 3;
  ctx->cinfo.in_color_space = JCS_RGB;
  jpeg_set_defaults(&ctx->cinfo);
  jpeg_set_quality(&ctx->cinfo, quality, TRUE);
  jpeg_start_compress(&ctx->cinfo, TRUE);
  const size_t stride = static_cast<size_t>(img->width) * 3;
  while (ctx->cinfo.next_scanline < ctx->cinfo.image_height) {
    JSAMPROW rp = const_cast<JSAMPROW>(img->pixels.data() + ctx->cinfo.next_scanline * stride);
    jpeg_write_scanlines(&ctx->cinfo, &rp, 1);
  }
  jpeg_finish_compress(&ctx->cinfo);
  ctx->finished = true;
  return true;
}

}  // namespace
}  // namespace image_internal

Status EncodeJpeg(const RgbImage& image, std::string* out, int quality) {
  using namespace image_internal;
  if (image.width <= 0 || image.height <= 0 || image.width > 65500 || image.height > 65500 ||
      image.pixels.size() != static_cast<size_t>(image.width) * image.height * 3) {
    return InvalidArgumentError("EncodeJpeg: empty, malformed or too large (> 65500 px) image");
  }
  quality = quality < 1 ? 1 : (quality > 100 ? 100 : quality);
  auto* ctx = static_cast<JpegEncodeCtx*>(std::calloc(1, sizeof(JpegEncodeCtx)));
  if (ctx == nullptr) return OutOfMemoryError("(jpeg encoder)");
  struct Guard {
    JpegEncodeCtx* ctx;
    ~Guard() {
      if (ctx->created) jpeg_destroy_compress(&ctx->cinfo);
      // After a failure libjpeg's memory destination may have replaced (and freed) the buffer
      // it last reported, so it is only freed after success (a failure leaks it; failures are
      // out-of-memory only).
      if (ctx->finished) std::free(ctx->buf);
      std::free(ctx);
    }
  } guard{ctx};
  if (!JpegEncodeAll(ctx, &image, quality)) return InternalError(std::string("jpeg encode: ") + ctx->err.msg);
  out->assign(reinterpret_cast<const char*>(ctx->buf), ctx->size);
  return Status::Ok();
}

Status WriteJpegFile(const RgbImage& image, const std::string& path, int quality) {
  std::string data;
  MINERU_RETURN_IF_ERROR(EncodeJpeg(image, &data, quality));
  return WriteStringToFile(path, data);
}

}  // namespace mineru
