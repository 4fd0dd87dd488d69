// image/png.cc — PNG decoding (to Pillow's convert("RGB") result) and encoding, with libpng.
//
// libpng reports errors by longjmp. Every function that calls setjmp below is a plain function
// that owns no C++ object with a destructor, so the jump never skips a destructor; buffers are
// allocated by the callers, whose frames the jump never crosses.
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "image/codecs_internal.h"
#include "image/decode.h"

namespace mineru {
namespace image_internal {
namespace {

struct PngReadCtx {
  png_structp png = nullptr;
  png_infop info = nullptr;
  const uint8_t* data = nullptr;
  size_t size = 0;
  size_t pos = 0;
  char msg[256] = {0};
};

void PngErrorFn(png_structp png, png_const_charp msg) {
  auto* ctx = static_cast<PngReadCtx*>(png_get_error_ptr(png));
  std::snprintf(ctx->msg, sizeof ctx->msg, "%s", msg ? msg : "libpng error");
  png_longjmp(png, 1);
}

void PngWarningFn(png_structp, png_const_charp) {}

void PngReadFn(png_structp png, png_bytep out, png_size_t n) {
  auto* ctx = static_cast<PngReadCtx*>(png_get_io_ptr(png));
  if (n > ctx->size - ctx->pos) png_error(png, "truncated PNG data");
  std::memcpy(out, ctx->data + ctx->pos, n);
  ctx->pos += n;
}

struct PngHeader {
  png_uint_32 width = 0, height = 0;
  int bit_depth = 0, color_type = 0, interlace = 0;
  png_colorp palette = nullptr;
  int num_palette = 0;
};

// Reads the signature and the chunks up to the first IDAT. No image memory is allocated.
bool PngReadHeader(PngReadCtx* ctx, PngHeader* hdr) {
  if (setjmp(png_jmpbuf(ctx->png))) return false;
  png_read_info(ctx->png, ctx->info);
  png_get_IHDR(ctx->png, ctx->info, &hdr->width, &hdr->height, &hdr->bit_depth, &hdr->color_type,
               &hdr->interlace, nullptr, nullptr);
  if (hdr->color_type == PNG_COLOR_TYPE_PALETTE) {
    if (!png_get_PLTE(ctx->png, ctx->info, &hdr->palette, &hdr->num_palette)) {
      png_error(ctx->png, "palette image without PLTE chunk");
    }
  }
  return true;
}

// Converts one decoded row (after png_set_packing; 16-bit samples big-endian) to RGB.
void ConvertPngRow(const PngHeader& h, const uint8_t* in, uint8_t* out) {
  const png_uint_32 w = h.width;
  switch (h.color_type) {
    case PNG_COLOR_TYPE_GRAY: {
      for (png_uint_32 x = 0; x < w; ++x) {
        uint8_t v;
        switch (h.bit_depth) {
          case 1:
            v = in[x] ? 255 : 0;
            break;  // Pillow mode "1"
          case 2:
            v = static_cast<uint8_t>(in[x] * 85);
            break;  // "L;2"
          case 4:
            v = static_cast<uint8_t>(in[x] * 17);
            break;  // "L;4"
          case 8:
            v = in[x];
            break;
          default:
            v = in[2 * x] != 0 ? 255 : in[2 * x + 1];
            break;  // "I;16" -> RGB saturates
        }
        out[3 * x] = out[3 * x + 1] = out[3 * x + 2] = v;
      }
      break;
    }
    case PNG_COLOR_TYPE_GRAY_ALPHA: {
      const int bps = h.bit_depth == 16 ? 2 : 1;  // 16-bit: high byte ("LA;16B")
      for (png_uint_32 x = 0; x < w; ++x) {
        const uint8_t v = in[2 * bps * x];
        out[3 * x] = out[3 * x + 1] = out[3 * x + 2] = v;
      }
      break;
    }
    case PNG_COLOR_TYPE_RGB:
    case PNG_COLOR_TYPE_RGB_ALPHA: {
      const int spp = h.color_type == PNG_COLOR_TYPE_RGB ? 3 : 4;
      const int bps = h.bit_depth == 16 ? 2 : 1;  // 16-bit: high byte ("RGB;16B", "RGBA;16B")
      for (png_uint_32 x = 0; x < w; ++x) {
        const uint8_t* p = in + static_cast<size_t>(x) * spp * bps;
        out[3 * x] = p[0];
        out[3 * x + 1] = p[bps];
        out[3 * x + 2] = p[2 * bps];
      }
      break;
    }
    case PNG_COLOR_TYPE_PALETTE: {
      for (png_uint_32 x = 0; x < w; ++x) {
        const int i = in[x];
        if (i < h.num_palette) {
          out[3 * x] = h.palette[i].red;
          out[3 * x + 1] = h.palette[i].green;
          out[3 * x + 2] = h.palette[i].blue;
        } else {
          out[3 * x] = out[3 * x + 1] = out[3 * x + 2] = 0;
        }
      }
      break;
    }
    default:
      break;
  }
}

// Decodes all rows into `out` (width*height*3). Non-interlaced images go row by row through
// `row` (rowbytes); interlaced ones need the whole raw image in `raw` with `rows` pointing into it.
bool PngReadPixels(PngReadCtx* ctx, const PngHeader* hdr, size_t rowbytes, uint8_t* out, uint8_t* row,
                   png_bytepp rows) {
  if (setjmp(png_jmpbuf(ctx->png))) return false;
  if (hdr->bit_depth < 8) png_set_packing(ctx->png);  // one byte per sample, values unscaled
  if (hdr->interlace != PNG_INTERLACE_NONE) png_set_interlace_handling(ctx->png);
  png_read_update_info(ctx->png, ctx->info);
  if (png_get_rowbytes(ctx->png, ctx->info) != rowbytes) png_error(ctx->png, "unexpected row size");
  const size_t out_stride = static_cast<size_t>(hdr->width) * 3;
  if (rows == nullptr) {
    for (png_uint_32 y = 0; y < hdr->height; ++y) {
      png_read_row(ctx->png, row, nullptr);
      ConvertPngRow(*hdr, row, out + y * out_stride);
    }
  } else {
    png_read_image(ctx->png, rows);
    for (png_uint_32 y = 0; y < hdr->height; ++y) ConvertPngRow(*hdr, rows[y], out + y * out_stride);
  }
  // The chunks after the image data are not read: Pillow ignores damage there too.
  return true;
}

struct PngReadGuard {
  PngReadCtx* ctx;
  ~PngReadGuard() { png_destroy_read_struct(&ctx->png, ctx->info ? &ctx->info : nullptr, nullptr); }
};

}  // namespace

StatusOr<RgbImage> DecodePng(const uint8_t* data, size_t size, const DecodeLimits& limits) {
  PngReadCtx ctx;
  ctx.data = data;
  ctx.size = size;
  ctx.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &ctx, PngErrorFn, PngWarningFn);
  if (ctx.png == nullptr) return InternalError("png: cannot create read struct");
  PngReadGuard guard{&ctx};
  ctx.info = png_create_info_struct(ctx.png);
  if (ctx.info == nullptr) return InternalError("png: cannot create info struct");
  png_set_read_fn(ctx.png, &ctx, PngReadFn);
  // The size limit is ours (checked right after the header, before any row buffer exists).
  png_set_user_limits(ctx.png, PNG_UINT_31_MAX, PNG_UINT_31_MAX);

  PngHeader hdr;
  if (!PngReadHeader(&ctx, &hdr)) return DataLossError(std::string("png: ") + ctx.msg);
  MINERU_RETURN_IF_ERROR(CheckClaimedSize(hdr.width, hdr.height, limits, "png"));
  int spp = 1;
  switch (hdr.color_type) {
    case PNG_COLOR_TYPE_GRAY_ALPHA:
      spp = 2;
      break;
    case PNG_COLOR_TYPE_RGB:
      spp = 3;
      break;
    case PNG_COLOR_TYPE_RGB_ALPHA:
      spp = 4;
      break;
    default:
      spp = 1;
      break;
  }
  const size_t rowbytes = static_cast<size_t>(hdr.width) * spp * (hdr.bit_depth == 16 ? 2 : 1);

  RgbImage img;
  MINERU_RETURN_IF_ERROR(AllocateImage(static_cast<int>(hdr.width), static_cast<int>(hdr.height), &img));
  std::vector<uint8_t> row;
  std::vector<uint8_t> raw;
  std::vector<png_bytep> rows;
  try {
    if (hdr.interlace == PNG_INTERLACE_NONE) {
      row.resize(rowbytes);
    } else {
      raw.resize(rowbytes * hdr.height);
      rows.resize(hdr.height);
      for (png_uint_32 y = 0; y < hdr.height; ++y) rows[y] = raw.data() + y * rowbytes;
    }
  } catch (const std::bad_alloc&) {
    return OutOfMemoryError("(png decoder)");
  }
  if (!PngReadPixels(&ctx, &hdr, rowbytes, img.pixels.data(), row.data(),
                     rows.empty() ? nullptr : rows.data())) {
    return DataLossError(std::string("png: ") + ctx.msg);
  }
  return img;
}

// ---------------------------------------------------------------------------------------------
// Encoding

namespace {

struct PngWriteCtx {
  png_structp png = nullptr;
  png_infop info = nullptr;
  std::string* out = nullptr;
  char msg[256] = {0};
};

void PngWriteErrorFn(png_structp png, png_const_charp msg) {
  auto* ctx = static_cast<PngWriteCtx*>(png_get_error_ptr(png));
  std::snprintf(ctx->msg, sizeof ctx->msg, "%s", msg ? msg : "libpng error");
  png_longjmp(png, 1);
}

void PngWriteFn(png_structp png, png_bytep data, png_size_t n) {
  auto* ctx = static_cast<PngWriteCtx*>(png_get_io_ptr(png));
  bool failed = false;
  try {
    ctx->out->append(reinterpret_cast<const char*>(data), n);
  } catch (...) {
    failed = true;
  }
  if (failed) png_error(png, "out of memory while encoding PNG");
}

void PngFlushFn(png_structp) {}

bool PngWriteAll(PngWriteCtx* ctx, const RgbImage* img, png_bytepp rows) {
  if (setjmp(png_jmpbuf(ctx->png))) return false;
  png_set_write_fn(ctx->png, ctx, PngWriteFn, PngFlushFn);
  png_set_compression_level(ctx->png, 6);
  png_set_IHDR(ctx->png, ctx->info, img->width, img->height, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(ctx->png, ctx->info);
  png_write_image(ctx->png, rows);
  png_write_end(ctx->png, nullptr);
  return true;
}

struct PngWriteGuard {
  PngWriteCtx* ctx;
  ~PngWriteGuard() { png_destroy_write_struct(&ctx->png, ctx->info ? &ctx->info : nullptr); }
};

}  // namespace
}  // namespace image_internal

Status EncodePng(const RgbImage& image, std::string* out) {
  using namespace image_internal;
  if (image.width <= 0 || image.height <= 0 ||
      image.pixels.size() != static_cast<size_t>(image.width) * image.height * 3) {
    return InvalidArgumentError("EncodePng: empty or malformed image");
  }
  out->clear();
  PngWriteCtx ctx;
  ctx.out = out;
  ctx.png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &ctx, PngWriteErrorFn, PngWarningFn);
  if (ctx.png == nullptr) return InternalError("png: cannot create write struct");
  PngWriteGuard guard{&ctx};
  ctx.info = png_create_info_struct(ctx.png);
  if (ctx.info == nullptr) return InternalError("png: cannot create info struct");
  std::vector<png_bytep> rows(image.height);
  for (int y = 0; y < image.height; ++y) {
    rows[y] = const_cast<png_bytep>(image.pixels.data() + static_cast<size_t>(y) * image.width * 3);
  }
  if (!PngWriteAll(&ctx, &image, rows.data())) return InternalError(std::string("png encode: ") + ctx.msg);
  return Status::Ok();
}

Status WritePngFile(const RgbImage& image, const std::string& path) {
  std::string data;
  MINERU_RETURN_IF_ERROR(EncodePng(image, &data));
  return WriteStringToFile(path, data);
}

}  // namespace mineru
