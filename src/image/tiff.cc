// image/tiff.cc — TIFF decoding with libtiff (first page), from memory.
//
// Common layouts (strips, contiguous samples, any compression libtiff decodes): 1-bit bilevel,
// 8-bit gray (+alpha), 16-bit gray, 8/16-bit RGB(A), 8-bit palette, 8-bit CMYK and JPEG-compressed
// YCbCr (converted to RGB by the JPEG codec, as Pillow asks libtiff to) are read scanline by
// scanline and converted as Pillow does (MinIsWhite inverted, palette = colormap >> 8, 16-bit gray
// clipped, 16-bit RGB high byte, CMYK by Pillow's cmyk2rgb, alpha dropped). Everything else (tiles,
// planar data, other photometrics) goes through libtiff's TIFFReadRGBAImage, whose conversions can
// differ from Pillow's by rounding (16-bit scaling, CMYK) and which premultiplies unassociated alpha.
#include <tiffio.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "image/codecs_internal.h"

namespace mineru {
namespace image_internal {
namespace {

struct TiffMem {
  const uint8_t* data = nullptr;
  uint64_t size = 0;
  uint64_t pos = 0;
  char msg[512] = {0};
};

tmsize_t TiffReadProc(thandle_t h, void* buf, tmsize_t n) {
  auto* m = static_cast<TiffMem*>(h);
  if (n <= 0 || m->pos >= m->size) return 0;
  uint64_t avail = m->size - m->pos;
  uint64_t k = static_cast<uint64_t>(n) < avail ? static_cast<uint64_t>(n) : avail;
  std::memcpy(buf, m->data + m->pos, k);
  m->pos += k;
  return static_cast<tmsize_t>(k);
}
tmsize_t TiffWriteProc(thandle_t, void*, tmsize_t) { return 0; }
toff_t TiffSeekProc(thandle_t h, toff_t off, int whence) {
  auto* m = static_cast<TiffMem*>(h);
  uint64_t base = whence == SEEK_SET ? 0 : (whence == SEEK_CUR ? m->pos : m->size);
  // off is unsigned; a negative relative seek arrives as a wrapped value.
  uint64_t np = base + off;
  if (whence != SEEK_SET && off > (uint64_t(1) << 62) && np > base) return static_cast<toff_t>(-1);
  m->pos = np;
  return np;
}
int TiffCloseProc(thandle_t) { return 0; }
toff_t TiffSizeProc(thandle_t h) { return static_cast<TiffMem*>(h)->size; }
int TiffMapProc(thandle_t, void**, toff_t*) { return 0; }
void TiffUnmapProc(thandle_t, void*, toff_t) {}

int TiffErrorHandler(TIFF*, void* user, const char* module, const char* fmt, va_list ap) {
  auto* m = static_cast<TiffMem*>(user);
  if (m != nullptr && m->msg[0] == 0) {
    char body[400];
    std::vsnprintf(body, sizeof body, fmt, ap);
    std::snprintf(m->msg, sizeof m->msg, "%s%s%s", module ? module : "", module ? ": " : "", body);
  }
  return 1;
}
int TiffWarningHandler(TIFF*, void*, const char*, const char*, va_list) { return 1; }

std::string TiffMessage(const TiffMem& m, const char* what) {
  std::string s = std::string("tiff: ") + what;
  if (m.msg[0] != 0) s += std::string(" (") + m.msg + ")";
  return s;
}

struct TiffCloser {
  void operator()(TIFF* t) const { TIFFClose(t); }
};
using TiffPtr = std::unique_ptr<TIFF, TiffCloser>;

// Opens `mem` (which must outlive the handle: libtiff reads through it and reports errors into it).
StatusOr<TiffPtr> OpenTiffMemory(TiffMem& mem) {
  TIFFOpenOptions* opts = TIFFOpenOptionsAlloc();
  if (opts == nullptr) return OutOfMemoryError("(tiff decoder)");
  TIFFOpenOptionsSetErrorHandlerExtR(opts, TiffErrorHandler, &mem);
  TIFFOpenOptionsSetWarningHandlerExtR(opts, TiffWarningHandler, &mem);
  TIFFOpenOptionsSetMaxSingleMemAlloc(opts, tmsize_t(1) << 31);
  TIFF* tif = TIFFClientOpenExt("memory", "rm", &mem, TiffReadProc, TiffWriteProc, TiffSeekProc,
                                TiffCloseProc, TiffSizeProc, TiffMapProc, TiffUnmapProc, opts);
  TIFFOpenOptionsFree(opts);
  if (tif == nullptr) return DataLossError(TiffMessage(mem, "cannot open"));
  return TiffPtr(tif);
}

// The scanline layouts converted here as Pillow does; kNone = libtiff's RGBA path.
enum class Kind { kNone, kGray8, kGrayBit, kGray16, kRgb8, kRgb16, kCmyk8, kPalette8 };

struct ScanLayout {
  Kind kind = Kind::kNone;
  bool invert = false;                              // MinIsWhite
  int step = 1;                                     // samples per pixel in a decoded scanline
  uint16_t* cmap[3] = {nullptr, nullptr, nullptr};  // kPalette8: owned by the TIFF handle
};

// Kind from the tags alone; may switch a JPEG-compressed YCbCr image to RGB output.
Kind ScanKind(TIFF* tif, uint16_t bps, uint16_t spp, uint16_t photometric, uint16_t compression,
              bool* invert) {
  if (photometric == PHOTOMETRIC_MINISBLACK || photometric == PHOTOMETRIC_MINISWHITE) {
    *invert = photometric == PHOTOMETRIC_MINISWHITE;
    Kind kind = Kind::kNone;
    if (bps == 8 && (spp == 1 || spp == 2)) kind = Kind::kGray8;
    if (bps == 1 && spp == 1) kind = Kind::kGrayBit;
    if (bps == 16 && spp == 1 && !*invert) kind = Kind::kGray16;  // Pillow "I;16": clipped to 255
    return kind;
  }
  if (photometric == PHOTOMETRIC_RGB && (bps == 8 || bps == 16) && (spp == 3 || spp == 4)) {
    return bps == 8 ? Kind::kRgb8 : Kind::kRgb16;  // 16-bit: Pillow keeps the high byte
  }
  if (photometric == PHOTOMETRIC_SEPARATED && bps == 8 && spp == 4) {
    uint16_t inkset = INKSET_CMYK;
    TIFFGetFieldDefaulted(tif, TIFFTAG_INKSET, &inkset);
    return inkset == INKSET_CMYK ? Kind::kCmyk8 : Kind::kNone;  // Pillow "CMYK" (not inverted) -> cmyk2rgb
  }
  if (photometric == PHOTOMETRIC_YCBCR && compression == COMPRESSION_JPEG && bps == 8 && spp == 3) {
    // As Pillow: let the JPEG codec convert to RGB.
    return TIFFSetField(tif, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB) ? Kind::kRgb8 : Kind::kNone;
  }
  if (photometric == PHOTOMETRIC_PALETTE && bps == 8 && spp == 1) return Kind::kPalette8;
  return Kind::kNone;
}

// The scanline layout of the first page of a w-pixel-wide image, or kNone when libtiff's RGBA path
// must decode it (tiles, planar data, other photometrics, unexpected scanline size).
StatusOr<ScanLayout> ClassifyTiff(TIFF* tif, const TiffMem& mem, uint32_t w) {
  uint16_t bps = 1, spp = 1, planar = PLANARCONFIG_CONTIG, compression = COMPRESSION_NONE;
  uint16_t photometric = 0xffff;
  TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &bps);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
  TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &planar);
  TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &compression);
  const bool has_photometric = TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &photometric) != 0;

  ScanLayout l;
  if (has_photometric && !TIFFIsTiled(tif) && planar == PLANARCONFIG_CONTIG &&
      compression != COMPRESSION_OJPEG) {
    l.kind = ScanKind(tif, bps, spp, photometric, compression, &l.invert);
  }
  if (l.kind == Kind::kPalette8 && !TIFFGetField(tif, TIFFTAG_COLORMAP, &l.cmap[0], &l.cmap[1], &l.cmap[2])) {
    return DataLossError(TiffMessage(mem, "palette image without colormap"));
  }
  l.step = (l.kind == Kind::kRgb8 && photometric == PHOTOMETRIC_YCBCR) ? 3 : spp;
  if (l.kind != Kind::kNone) {
    const uint64_t expected =
        l.kind == Kind::kGrayBit ? (uint64_t(w) + 7) / 8 : uint64_t(w) * l.step * (bps / 8);
    if (static_cast<uint64_t>(TIFFScanlineSize64(tif)) != expected) l.kind = Kind::kNone;
  }
  return l;
}

// One decoded scanline of w pixels -> w RGB8 pixels at `out`, converted as Pillow does.
void ConvertScanline(const ScanLayout& l, const uint8_t* line, uint32_t w, uint8_t* out) {
  const int step = l.step;
  for (uint32_t x = 0; x < w; ++x, out += 3) {
    switch (l.kind) {
      case Kind::kGray8: {
        uint8_t v = line[static_cast<size_t>(x) * step];
        if (l.invert) v = static_cast<uint8_t>(255 - v);
        out[0] = out[1] = out[2] = v;
        break;
      }
      case Kind::kGrayBit: {
        const bool bit = (line[x >> 3] >> (7 - (x & 7))) & 1;
        const uint8_t v = (bit != l.invert) ? 255 : 0;
        out[0] = out[1] = out[2] = v;
        break;
      }
      case Kind::kGray16: {
        uint16_t v;
        std::memcpy(&v, &line[static_cast<size_t>(x) * 2], 2);  // libtiff gives native order
        out[0] = out[1] = out[2] = static_cast<uint8_t>(v > 255 ? 255 : v);
        break;
      }
      case Kind::kRgb8: {
        const uint8_t* p = &line[static_cast<size_t>(x) * step];
        out[0] = p[0];
        out[1] = p[1];
        out[2] = p[2];
        break;
      }
      case Kind::kRgb16: {
        for (int c = 0; c < 3; ++c) {
          uint16_t v;
          std::memcpy(&v, &line[(static_cast<size_t>(x) * step + c) * 2], 2);
          out[c] = static_cast<uint8_t>(v >> 8);
        }
        break;
      }
      case Kind::kCmyk8: {
        const uint8_t* p = &line[static_cast<size_t>(x) * 4];
        const int nk = 255 - p[3];
        for (int c = 0; c < 3; ++c) {
          const int t = p[c] * nk + 128;
          const int v = nk - (((t >> 8) + t) >> 8);
          out[c] = static_cast<uint8_t>(v < 0 ? 0 : v);
        }
        break;
      }
      case Kind::kPalette8: {
        const uint8_t i = line[x];
        out[0] = static_cast<uint8_t>(l.cmap[0][i] >> 8);
        out[1] = static_cast<uint8_t>(l.cmap[1][i] >> 8);
        out[2] = static_cast<uint8_t>(l.cmap[2][i] >> 8);
        break;
      }
      default:
        break;
    }
  }
}

// Scanline path (l.kind != kNone): fills the allocated img row by row.
Status ReadScanlines(TIFF* tif, const TiffMem& mem, const ScanLayout& l, RgbImage* img) {
  std::vector<uint8_t> line;
  try {
    line.resize(static_cast<size_t>(TIFFScanlineSize64(tif)));
  } catch (const std::bad_alloc&) {
    return OutOfMemoryError("(tiff decoder)");
  }
  const uint32_t w = static_cast<uint32_t>(img->width), h = static_cast<uint32_t>(img->height);
  const size_t stride = static_cast<size_t>(w) * 3;
  for (uint32_t y = 0; y < h; ++y) {
    if (TIFFReadScanline(tif, line.data(), y, 0) < 0) {
      return DataLossError(TiffMessage(mem, "corrupt or truncated image data"));
    }
    ConvertScanline(l, line.data(), w, img->pixels.data() + y * stride);
  }
  return Status::Ok();
}

// General path: libtiff's RGBA conversion (tiles, planar, 16-bit, CMYK, YCbCr, Lab, ...).
Status ReadRgba(TIFF* tif, const TiffMem& mem, RgbImage* img) {
  char emsg[1024] = {0};
  if (!TIFFRGBAImageOK(tif, emsg)) {
    return UnimplementedError(std::string("tiff: unsupported layout: ") + emsg);
  }
  const uint32_t w = static_cast<uint32_t>(img->width), h = static_cast<uint32_t>(img->height);
  std::vector<uint32_t> raster;
  try {
    raster.resize(static_cast<size_t>(w) * h);
  } catch (const std::bad_alloc&) {
    return OutOfMemoryError("(tiff decoder)");
  }
  if (!TIFFReadRGBAImageOriented(tif, w, h, raster.data(), ORIENTATION_TOPLEFT, 1)) {
    return DataLossError(TiffMessage(mem, "corrupt or truncated image data"));
  }
  for (size_t i = 0; i < raster.size(); ++i) {
    img->pixels[3 * i] = static_cast<uint8_t>(TIFFGetR(raster[i]));
    img->pixels[3 * i + 1] = static_cast<uint8_t>(TIFFGetG(raster[i]));
    img->pixels[3 * i + 2] = static_cast<uint8_t>(TIFFGetB(raster[i]));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<RgbImage> DecodeTiff(const uint8_t* data, size_t size, const DecodeLimits& limits) {
  TiffMem mem;
  mem.data = data;
  mem.size = size;
  MINERU_ASSIGN_OR_RETURN(TiffPtr tif, OpenTiffMemory(mem));

  uint32_t w = 0, h = 0;
  if (!TIFFGetField(tif.get(), TIFFTAG_IMAGEWIDTH, &w) || !TIFFGetField(tif.get(), TIFFTAG_IMAGELENGTH, &h)) {
    return DataLossError(TiffMessage(mem, "missing image size"));
  }
  MINERU_RETURN_IF_ERROR(CheckClaimedSize(w, h, limits, "tiff"));
  MINERU_ASSIGN_OR_RETURN(ScanLayout layout, ClassifyTiff(tif.get(), mem, w));

  RgbImage img;
  MINERU_RETURN_IF_ERROR(AllocateImage(static_cast<int>(w), static_cast<int>(h), &img));
  if (layout.kind != Kind::kNone) {
    MINERU_RETURN_IF_ERROR(ReadScanlines(tif.get(), mem, layout, &img));
  } else {
    MINERU_RETURN_IF_ERROR(ReadRgba(tif.get(), mem, &img));
  }
  return img;
}

}  // namespace image_internal
}  // namespace mineru
