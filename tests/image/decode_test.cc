// Decoding (Pillow convert("RGB") semantics), limits and robustness; PNG/JPEG encoding.
// Test images are generated here with the codec libraries themselves.
#include <gtest/gtest.h>
#include <png.h>
#include <sys/resource.h>
#include <tiffio.h>
#include <webp/encode.h>

#include <cstdio>
// jpeglib.h needs size_t and FILE first.
#include <jpeglib.h>

#include <csetjmp>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../util/files.h"
#include "base/mapped_file.h"
#include "image/decode.h"

namespace mineru {
namespace {

using testing::kFx;
using testing::ReadAll;

// ---------------------------------------------------------------------------------------------
// PNG writer for arbitrary color types / depths (samples given one per channel, unpacked).

struct PngSpec {
  int w = 0, h = 0, color_type = PNG_COLOR_TYPE_RGB, bit_depth = 8;
  bool interlace = false;
  std::vector<uint16_t> samples;  // w*h*channels
  std::vector<png_color> palette;
  std::vector<uint8_t> trns;
};

PngSpec Spec(int w, int h, int color_type, int bit_depth) {
  PngSpec s;
  s.w = w;
  s.h = h;
  s.color_type = color_type;
  s.bit_depth = bit_depth;
  return s;
}

int Channels(int ct) {
  switch (ct) {
    case PNG_COLOR_TYPE_GRAY_ALPHA:
      return 2;
    case PNG_COLOR_TYPE_RGB:
      return 3;
    case PNG_COLOR_TYPE_RGB_ALPHA:
      return 4;
    default:
      return 1;
  }
}

void AppendFn(png_structp png, png_bytep d, png_size_t n) {
  static_cast<std::string*>(png_get_io_ptr(png))->append(reinterpret_cast<char*>(d), n);
}
void FlushFn(png_structp) {}

bool WritePngImpl(png_structp png, png_infop info, const PngSpec* s, png_bytepp rows, std::string* out) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_write_fn(png, out, AppendFn, FlushFn);
  png_set_IHDR(png, info, s->w, s->h, s->bit_depth, s->color_type,
               s->interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  if (!s->palette.empty()) png_set_PLTE(png, info, s->palette.data(), static_cast<int>(s->palette.size()));
  if (!s->trns.empty()) {
    png_set_tRNS(png, info, const_cast<png_bytep>(s->trns.data()), static_cast<int>(s->trns.size()), nullptr);
  }
  png_write_info(png, info);
  png_write_image(png, rows);
  png_write_end(png, nullptr);
  return true;
}

std::string MakePng(const PngSpec& s) {
  const int ch = Channels(s.color_type);
  const size_t rowbytes = (static_cast<size_t>(s.w) * ch * s.bit_depth + 7) / 8;
  std::vector<std::vector<uint8_t>> rowdata(s.h, std::vector<uint8_t>(rowbytes, 0));
  for (int y = 0; y < s.h; ++y) {
    for (int i = 0; i < s.w * ch; ++i) {
      const uint16_t v = s.samples[static_cast<size_t>(y) * s.w * ch + i];
      auto& r = rowdata[y];
      if (s.bit_depth == 16) {
        r[2 * i] = v >> 8;
        r[2 * i + 1] = v & 0xff;
      } else if (s.bit_depth == 8) {
        r[i] = static_cast<uint8_t>(v);
      } else {
        const int per = 8 / s.bit_depth;
        const int shift = 8 - s.bit_depth * (i % per + 1);
        r[i / per] |= static_cast<uint8_t>(v << shift);
      }
    }
  }
  std::vector<png_bytep> rows(s.h);
  for (int y = 0; y < s.h; ++y) rows[y] = rowdata[y].data();
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  std::string out;
  const bool ok = WritePngImpl(png, info, &s, rows.data(), &out);
  png_destroy_write_struct(&png, &info);
  EXPECT_TRUE(ok);
  return out;
}

StatusOr<RgbImage> Decode(const std::string& bytes, const DecodeLimits& lim = {}) {
  return DecodeImage(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), lim);
}

std::vector<uint8_t> Rgb(std::initializer_list<int> v) {
  std::vector<uint8_t> out;
  for (int x : v) out.push_back(static_cast<uint8_t>(x));
  return out;
}

uint32_t Crc32(const uint8_t* p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return c ^ 0xffffffffu;
}

void PutBe32(std::string* s, size_t at, uint32_t v) {
  (*s)[at] = static_cast<char>(v >> 24);
  (*s)[at + 1] = static_cast<char>(v >> 16);
  (*s)[at + 2] = static_cast<char>(v >> 8);
  (*s)[at + 3] = static_cast<char>(v);
}

// ---------------------------------------------------------------------------------------------
// PNG conversions

TEST(DecodePng, Rgb8) {
  PngSpec s = Spec(2, 1, PNG_COLOR_TYPE_RGB, 8);
  s.samples = {1, 2, 3, 250, 251, 252};
  auto img = Decode(MakePng(s));
  ASSERT_TRUE(img.ok()) << img.status().ToString();
  EXPECT_EQ(img->width, 2);
  EXPECT_EQ(img->height, 1);
  EXPECT_EQ(img->pixels, Rgb({1, 2, 3, 250, 251, 252}));
}

TEST(DecodePng, Gray8Replicated) {
  PngSpec s = Spec(3, 1, PNG_COLOR_TYPE_GRAY, 8);
  s.samples = {0, 77, 255};
  auto img = Decode(MakePng(s));
  ASSERT_TRUE(img.ok()) << img.status().ToString();
  EXPECT_EQ(img->pixels, Rgb({0, 0, 0, 77, 77, 77, 255, 255, 255}));
}

TEST(DecodePng, GrayLowBitDepthsScaled) {
  PngSpec s1 = Spec(2, 1, PNG_COLOR_TYPE_GRAY, 1);
  s1.samples = {0, 1};
  auto a = Decode(MakePng(s1));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->pixels, Rgb({0, 0, 0, 255, 255, 255}));
  PngSpec s2 = Spec(4, 1, PNG_COLOR_TYPE_GRAY, 2);
  s2.samples = {0, 1, 2, 3};
  auto b = Decode(MakePng(s2));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->pixels, Rgb({0, 0, 0, 85, 85, 85, 170, 170, 170, 255, 255, 255}));
  PngSpec s4 = Spec(3, 1, PNG_COLOR_TYPE_GRAY, 4);
  s4.samples = {0, 7, 15};
  auto c = Decode(MakePng(s4));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->pixels, Rgb({0, 0, 0, 119, 119, 119, 255, 255, 255}));
}

TEST(DecodePng, Gray16IsClippedLikePillow) {
  // Pillow opens 16-bit gray as "I;16"; convert("RGB") saturates values above 255.
  PngSpec s = Spec(5, 1, PNG_COLOR_TYPE_GRAY, 16);
  s.samples = {5, 255, 256, 0x1234, 0xffff};
  auto img = Decode(MakePng(s));
  ASSERT_TRUE(img.ok()) << img.status().ToString();
  EXPECT_EQ(img->pixels, Rgb({5, 5, 5, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255}));
}

TEST(DecodePng, GrayAlphaDropsAlpha) {
  PngSpec s = Spec(2, 1, PNG_COLOR_TYPE_GRAY_ALPHA, 8);
  s.samples = {10, 0, 200, 128};
  auto img = Decode(MakePng(s));
  ASSERT_TRUE(img.ok());
  EXPECT_EQ(img->pixels, Rgb({10, 10, 10, 200, 200, 200}));
  PngSpec s16 = Spec(2, 1, PNG_COLOR_TYPE_GRAY_ALPHA, 16);
  s16.samples = {0x12ff, 0, 0xab01, 0xffff};
  auto b = Decode(MakePng(s16));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->pixels, Rgb({0x12, 0x12, 0x12, 0xab, 0xab, 0xab}));
}

TEST(DecodePng, RgbaDropsAlphaWithoutCompositing) {
  PngSpec s = Spec(2, 1, PNG_COLOR_TYPE_RGB_ALPHA, 8);
  s.samples = {10, 20, 30, 0, 40, 50, 60, 255};
  auto img = Decode(MakePng(s));
  ASSERT_TRUE(img.ok());
  EXPECT_EQ(img->pixels, Rgb({10, 20, 30, 40, 50, 60}));
}

TEST(DecodePng, Rgb16AndRgba16KeepHighByte) {
  PngSpec s = Spec(1, 1, PNG_COLOR_TYPE_RGB, 16);
  s.samples = {0x01ff, 0x8000, 0xfe01};
  auto a = Decode(MakePng(s));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->pixels, Rgb({0x01, 0x80, 0xfe}));
  PngSpec t = Spec(1, 1, PNG_COLOR_TYPE_RGB_ALPHA, 16);
  t.samples = {0x7f80, 0x0001, 0xffff, 0x0000};
  auto b = Decode(MakePng(t));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->pixels, Rgb({0x7f, 0x00, 0xff}));
}

TEST(DecodePng, PaletteAndPaletteWithTrns) {
  PngSpec s = Spec(3, 1, PNG_COLOR_TYPE_PALETTE, 8);
  s.palette = {{255, 0, 0}, {0, 255, 0}, {1, 2, 3}};
  s.samples = {2, 0, 1};
  auto a = Decode(MakePng(s));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->pixels, Rgb({1, 2, 3, 255, 0, 0, 0, 255, 0}));
  s.trns = {0, 128};  // alpha dropped: colors unchanged
  auto b = Decode(MakePng(s));
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->pixels, a->pixels);
  PngSpec p4 = Spec(3, 1, PNG_COLOR_TYPE_PALETTE, 4);
  p4.palette = {{9, 8, 7}, {6, 5, 4}};
  p4.samples = {1, 0, 1};
  auto c = Decode(MakePng(p4));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->pixels, Rgb({6, 5, 4, 9, 8, 7, 6, 5, 4}));
}

TEST(DecodePng, InterlacedEqualsNonInterlaced) {
  PngSpec s = Spec(13, 11, PNG_COLOR_TYPE_RGB, 8);
  for (int i = 0; i < 13 * 11 * 3; ++i) s.samples.push_back(static_cast<uint16_t>((i * 37) & 255));
  auto a = Decode(MakePng(s));
  s.interlace = true;
  auto b = Decode(MakePng(s));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->pixels, b->pixels);
  std::vector<uint8_t> want(s.samples.begin(), s.samples.end());
  EXPECT_EQ(a->pixels, want);
}

TEST(DecodePng, FixtureFile) {
  auto img = DecodeImageFile(kFx + "/resize/src.png");
  ASSERT_TRUE(img.ok()) << img.status().ToString();
  EXPECT_EQ(img->width, 173);
  EXPECT_EQ(img->height, 91);
  EXPECT_EQ(img->pixels.size(), 173u * 91 * 3);
}

TEST(DecodePng, TruncatedIsAnError) {
  PngSpec s = Spec(40, 30, PNG_COLOR_TYPE_RGB, 8);
  std::mt19937 rng(1);
  for (int i = 0; i < 40 * 30 * 3; ++i) s.samples.push_back(rng() & 255);
  const std::string full = MakePng(s);
  ASSERT_TRUE(Decode(full).ok());
  for (size_t cut : {size_t(8), size_t(20), size_t(33), full.size() / 2, full.size() - 20}) {
    auto r = Decode(full.substr(0, cut));
    EXPECT_FALSE(r.ok()) << "cut at " << cut;
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << r.status().ToString();
  }
}

TEST(DecodePng, HugeClaimedSizeFailsBeforeAllocating) {
  PngSpec s = Spec(2, 2, PNG_COLOR_TYPE_RGB, 8);
  s.samples.assign(12, 7);
  std::string png = MakePng(s);
  // IHDR data starts at byte 16 (8 signature + 4 length + 4 type); CRC covers type + data.
  PutBe32(&png, 16, 60000);
  PutBe32(&png, 20, 60000);
  PutBe32(&png, 29, Crc32(reinterpret_cast<const uint8_t*>(png.data()) + 12, 17));
  // The peak resident size (KiB on Linux) before and after: a decoder that allocated and filled
  // the claimed 60000x60000 RGB image (10.8 GB) would raise it by gigabytes.
  auto peak_kib = [] {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<long>(u.ru_maxrss);
  };
  const long peak_before = peak_kib();
  auto r = Decode(png);
  const long grown_kib = peak_kib() - peak_before;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status().ToString();
  EXPECT_NE(r.status().message().find("60000x60000"), std::string::npos) << r.status().message();
  EXPECT_LT(grown_kib, 256L << 10) << "the peak resident size grew by " << grown_kib << " KiB";
  // A custom limit applies too.
  DecodeLimits lim;
  lim.max_pixels = 3;
  auto small = Decode(MakePng(s), lim);
  ASSERT_FALSE(small.ok());
  EXPECT_EQ(small.status().code(), StatusCode::kResourceExhausted);
  lim.max_pixels = 4;
  EXPECT_TRUE(Decode(MakePng(s), lim).ok());
}

TEST(DecodePng, ZeroWidthHeaderIsAnError) {
  PngSpec s = Spec(2, 2, PNG_COLOR_TYPE_RGB, 8);
  s.samples.assign(12, 7);
  std::string png = MakePng(s);
  PutBe32(&png, 16, 0);
  PutBe32(&png, 29, Crc32(reinterpret_cast<const uint8_t*>(png.data()) + 12, 17));
  EXPECT_FALSE(Decode(png).ok());
}

// ---------------------------------------------------------------------------------------------
// Generic input errors

TEST(Decode, EmptyAndGarbage) {
  auto e = Decode("");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  std::mt19937 rng(7);
  std::string garbage(1000, '\0');
  for (auto& c : garbage) c = static_cast<char>(rng() & 255);
  garbage[0] = 'x';
  auto g = Decode(garbage);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("unsupported image format"), std::string::npos);
  // Right magic, garbage after it.
  for (std::string magic :
       {std::string("\x89PNG\r\n\x1a\n", 8), std::string("\xff\xd8\xff", 3),
        std::string("RIFF\x10\0\0\0WEBP", 12), std::string("II*\0", 4), std::string("MM\0*", 4)}) {
    std::string bad = magic + garbage;
    auto r = Decode(bad);
    EXPECT_FALSE(r.ok()) << "magic " << magic.size();
    EXPECT_FALSE(Decode(magic).ok());
  }
}

TEST(Decode, ZeroByteFileAndMissingFile) {
  const std::string path = ::testing::TempDir() + "/mineru_image_empty.png";
  ASSERT_TRUE(WriteStringToFile(path, "").ok());
  auto r = DecodeImageFile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  auto m = DecodeImageFile(::testing::TempDir() + "/definitely_missing_file.png");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
}

// ---------------------------------------------------------------------------------------------
// JPEG

RgbImage Smooth(int w, int h) {
  RgbImage im;
  im.width = w;
  im.height = h;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      im.pixels.push_back(static_cast<uint8_t>(x * 255 / (w - 1)));
      im.pixels.push_back(static_cast<uint8_t>(y * 255 / (h - 1)));
      im.pixels.push_back(128);
    }
  }
  return im;
}

double MeanAbsDiff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += std::abs(int(a[i]) - int(b[i]));
  return s / a.size();
}

TEST(Jpeg, RoundTrip) {
  RgbImage im = Smooth(64, 48);
  std::string jpg;
  ASSERT_TRUE(EncodeJpeg(im, &jpg, 95).ok());
  ASSERT_GT(jpg.size(), 100u);
  auto back = Decode(jpg);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->width, 64);
  EXPECT_EQ(back->height, 48);
  EXPECT_LT(MeanAbsDiff(back->pixels, im.pixels), 2.0);
  const std::string path = ::testing::TempDir() + "/mineru_image_rt.jpg";
  ASSERT_TRUE(WriteJpegFile(im, path, 90).ok());
  auto f = DecodeImageFile(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_LT(MeanAbsDiff(f->pixels, im.pixels), 3.0);
}

// Raw libjpeg encode of `components` samples per pixel (gray or CMYK as stored).
std::string RawJpeg(int w, int h, int components, J_COLOR_SPACE cs, const std::vector<uint8_t>& samples) {
  jpeg_compress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &buf, &size);
  c.image_width = w;
  c.image_height = h;
  c.input_components = components;
  c.in_color_space = cs;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 100, TRUE);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(&samples[static_cast<size_t>(c.next_scanline) * w * components]);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  std::string out(reinterpret_cast<char*>(buf), size);
  jpeg_destroy_compress(&c);
  free(buf);
  return out;
}

TEST(Jpeg, GrayscaleReplicated) {
  std::vector<uint8_t> g(16 * 16, 93);
  auto img = Decode(RawJpeg(16, 16, 1, JCS_GRAYSCALE, g));
  ASSERT_TRUE(img.ok()) << img.status().ToString();
  for (size_t i = 0; i < img->pixels.size(); ++i) EXPECT_NEAR(img->pixels[i], 93, 1);
}

TEST(Jpeg, CmykInvertedAsPillow) {
  // Stored (200, 100, 50, 230). Pillow reads CMYK JPEGs as Adobe-inverted: C=55 M=155 Y=205 K=25,
  // then R = (255-K) - round(C*(255-K)/255) = 230 - 50 = 180, G = 230 - 140 = 90, B = 230 - 185 = 45.
  std::vector<uint8_t> s;
  for (int i = 0; i < 16 * 16; ++i) s.insert(s.end(), {200, 100, 50, 230});
  auto img = Decode(RawJpeg(16, 16, 4, JCS_CMYK, s));
  ASSERT_TRUE(img.ok()) << img.status().ToString();
  for (size_t i = 0; i < img->pixels.size(); i += 3) {
    EXPECT_NEAR(img->pixels[i], 180, 2);
    EXPECT_NEAR(img->pixels[i + 1], 90, 2);
    EXPECT_NEAR(img->pixels[i + 2], 45, 2);
  }
}

TEST(Jpeg, TruncatedAndHugeHeader) {
  RgbImage im = Smooth(64, 48);
  std::string jpg;
  ASSERT_TRUE(EncodeJpeg(im, &jpg, 90).ok());
  for (size_t cut : {size_t(3), size_t(50), jpg.size() / 2, jpg.size() - 10}) {
    auto r = Decode(jpg.substr(0, cut));
    EXPECT_FALSE(r.ok()) << "cut at " << cut;
  }
  // Patch the SOF0 size fields (FFC0 len(2) precision(1) height(2) width(2)).
  size_t sof = jpg.find(std::string("\xff\xc0", 2));
  ASSERT_NE(sof, std::string::npos);
  std::string big = jpg;
  big[sof + 5] = static_cast<char>(0xea);  // 60000 = 0xea60
  big[sof + 6] = static_cast<char>(0x60);
  big[sof + 7] = static_cast<char>(0xea);
  big[sof + 8] = static_cast<char>(0x60);
  auto r = Decode(big);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status().ToString();
}

// ---------------------------------------------------------------------------------------------
// WebP

TEST(Webp, LosslessExact) {
  RgbImage im = Smooth(33, 17);
  uint8_t* out = nullptr;
  size_t n = WebPEncodeLosslessRGB(im.pixels.data(), im.width, im.height, im.width * 3, &out);
  ASSERT_GT(n, 0u);
  std::string bytes(reinterpret_cast<char*>(out), n);
  WebPFree(out);
  auto img = Decode(bytes);
  ASSERT_TRUE(img.ok()) << img.status().ToString();
  EXPECT_EQ(img->width, 33);
  EXPECT_EQ(img->height, 17);
  EXPECT_EQ(img->pixels, im.pixels);
  DecodeLimits lim;
  lim.max_pixels = 33 * 17 - 1;
  auto r = Decode(bytes, lim);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_FALSE(Decode(bytes.substr(0, bytes.size() / 2)).ok());
}

TEST(Webp, AlphaDroppedAndLossy) {
  std::vector<uint8_t> rgba;
  for (int i = 0; i < 8 * 8; ++i) rgba.insert(rgba.end(), {uint8_t(i * 3), 40, 200, 128});
  uint8_t* out = nullptr;
  size_t n = WebPEncodeLosslessRGBA(rgba.data(), 8, 8, 8 * 4, &out);
  ASSERT_GT(n, 0u);
  std::string bytes(reinterpret_cast<char*>(out), n);
  WebPFree(out);
  auto img = Decode(bytes);
  ASSERT_TRUE(img.ok()) << img.status().ToString();
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(img->pixels[3 * i], i * 3);
    EXPECT_EQ(img->pixels[3 * i + 1], 40);
    EXPECT_EQ(img->pixels[3 * i + 2], 200);
  }
  RgbImage im = Smooth(40, 24);
  n = WebPEncodeRGB(im.pixels.data(), im.width, im.height, im.width * 3, 95, &out);
  ASSERT_GT(n, 0u);
  std::string lossy(reinterpret_cast<char*>(out), n);
  WebPFree(out);
  auto l = Decode(lossy);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ(l->width, 40);
  EXPECT_LT(MeanAbsDiff(l->pixels, im.pixels), 4.0);
}

// ---------------------------------------------------------------------------------------------
// TIFF

std::string MakeTiff(int w, int h, int spp, int bps, int photometric, const std::vector<uint8_t>& bytes,
                     bool tiled = false, uint16_t* cmap = nullptr, bool jpeg_ycbcr = false) {
  const std::string path = ::testing::TempDir() + "/mineru_image_test.tif";
  TIFF* t = TIFFOpen(path.c_str(), "w");
  EXPECT_NE(t, nullptr);
  TIFFSetField(t, TIFFTAG_IMAGEWIDTH, w);
  TIFFSetField(t, TIFFTAG_IMAGELENGTH, h);
  TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, spp);
  TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, bps);
  TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
  if (jpeg_ycbcr) {
    TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_YCBCR);
    TIFFSetField(t, TIFFTAG_COMPRESSION, COMPRESSION_JPEG);
    TIFFSetField(t, TIFFTAG_JPEGQUALITY, 95);
    TIFFSetField(t, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB);
  } else {
    TIFFSetField(t, TIFFTAG_PHOTOMETRIC, photometric);
    TIFFSetField(t, TIFFTAG_COMPRESSION, COMPRESSION_ADOBE_DEFLATE);
  }
  if (cmap) TIFFSetField(t, TIFFTAG_COLORMAP, cmap, cmap + 256, cmap + 512);
  const size_t rowbytes = (static_cast<size_t>(w) * spp * bps + 7) / 8;
  if (tiled) {
    TIFFSetField(t, TIFFTAG_TILEWIDTH, 16);
    TIFFSetField(t, TIFFTAG_TILELENGTH, 16);
    std::vector<uint8_t> tile(16 * 16 * spp);
    for (int ty = 0; ty < h; ty += 16) {
      for (int tx = 0; tx < w; tx += 16) {
        std::fill(tile.begin(), tile.end(), 0);
        for (int y = 0; y < 16 && ty + y < h; ++y)
          for (int x = 0; x < 16 && tx + x < w; ++x)
            for (int c = 0; c < spp; ++c)
              tile[(y * 16 + x) * spp + c] = bytes[((ty + y) * w + tx + x) * spp + c];
        TIFFWriteTile(t, tile.data(), tx, ty, 0, 0);
      }
    }
  } else {
    TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, jpeg_ycbcr ? 16 : 4);
    for (int y = 0; y < h; ++y) {
      TIFFWriteScanline(t, const_cast<uint8_t*>(&bytes[y * rowbytes]), y, 0);
    }
  }
  TIFFClose(t);
  return ReadAll(path);
}

TEST(Tiff, RgbStripsTilesGrayBilevelPalette) {
  RgbImage im = Smooth(37, 21);
  auto a = Decode(MakeTiff(37, 21, 3, 8, PHOTOMETRIC_RGB, im.pixels));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->pixels, im.pixels);
  auto b = Decode(MakeTiff(37, 21, 3, 8, PHOTOMETRIC_RGB, im.pixels, /*tiled=*/true));
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->pixels, im.pixels);

  std::vector<uint8_t> g = {0, 100, 255, 7};
  auto c = Decode(MakeTiff(2, 2, 1, 8, PHOTOMETRIC_MINISWHITE, g));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->pixels, Rgb({255, 255, 255, 155, 155, 155, 0, 0, 0, 248, 248, 248}));

  // 1-bit MinIsWhite, 10 px wide: bits 1000000001 -> black ... black.
  std::vector<uint8_t> bits = {0x80, 0x40};
  auto d = Decode(MakeTiff(10, 1, 1, 1, PHOTOMETRIC_MINISWHITE, bits));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  for (int x = 0; x < 10; ++x) {
    const int want = (x == 0 || x == 9) ? 0 : 255;
    EXPECT_EQ(d->pixels[3 * x], want) << x;
  }

  std::vector<uint16_t> cmap(768, 0);
  cmap[0 + 1] = 0xff00;
  cmap[256 + 1] = 0x8000;
  cmap[512 + 1] = 0x1234;
  auto e = Decode(MakeTiff(2, 1, 1, 8, PHOTOMETRIC_PALETTE, {1, 0}, false, cmap.data()));
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->pixels, Rgb({0xff, 0x80, 0x12, 0, 0, 0}));

  // 16-bit gray is clipped (Pillow "I;16"), 16-bit RGB keeps the high byte.
  std::vector<uint16_t> g16 = {5, 300, 0xffff};
  std::vector<uint8_t> g16b(6);
  std::memcpy(g16b.data(), g16.data(), 6);
  auto k = Decode(MakeTiff(3, 1, 1, 16, PHOTOMETRIC_MINISBLACK, g16b));
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(k->pixels, Rgb({5, 5, 5, 255, 255, 255, 255, 255, 255}));
  std::vector<uint16_t> c16 = {0x12ff, 0x3400, 0xfe80};
  std::vector<uint8_t> c16b(6);
  std::memcpy(c16b.data(), c16.data(), 6);
  auto l = Decode(MakeTiff(1, 1, 3, 16, PHOTOMETRIC_RGB, c16b));
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ(l->pixels, Rgb({0x12, 0x34, 0xfe}));
  // CMYK (not inverted in TIFF): C=55 M=155 Y=205 K=25 -> (180, 90, 45) as in the JPEG test.
  auto cm = Decode(MakeTiff(1, 1, 4, 8, PHOTOMETRIC_SEPARATED, {55, 155, 205, 25}));
  ASSERT_TRUE(cm.ok()) << cm.status().ToString();
  EXPECT_EQ(cm->pixels, Rgb({180, 90, 45}));

  // JPEG-compressed YCbCr (typical of scanners): decoded to RGB by the JPEG codec.
  auto j = Decode(MakeTiff(37, 21, 3, 8, PHOTOMETRIC_RGB, im.pixels, false, nullptr, /*jpeg_ycbcr=*/true));
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(j->width, 37);
  EXPECT_LT(MeanAbsDiff(j->pixels, im.pixels), 3.0);

  std::string t = MakeTiff(37, 21, 3, 8, PHOTOMETRIC_RGB, im.pixels);
  DecodeLimits lim;
  lim.max_pixels = 100;
  auto r = Decode(t, lim);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_FALSE(Decode(t.substr(0, t.size() / 2)).ok());
}

// ---------------------------------------------------------------------------------------------
// Robustness: truncations and random corruption of valid files of every format never crash.

TEST(Decode, CorruptionNeverCrashes) {
  RgbImage im = Smooth(24, 20);
  std::vector<std::string> files;
  std::string s;
  ASSERT_TRUE(EncodePng(im, &s).ok());
  files.push_back(s);
  ASSERT_TRUE(EncodeJpeg(im, &s, 80).ok());
  files.push_back(s);
  uint8_t* out = nullptr;
  size_t n = WebPEncodeRGB(im.pixels.data(), 24, 20, 72, 80, &out);
  files.emplace_back(reinterpret_cast<char*>(out), n);
  WebPFree(out);
  n = WebPEncodeLosslessRGB(im.pixels.data(), 24, 20, 72, &out);
  files.emplace_back(reinterpret_cast<char*>(out), n);
  WebPFree(out);
  files.push_back(MakeTiff(24, 20, 3, 8, PHOTOMETRIC_RGB, im.pixels));
  std::mt19937 rng(123);
  int decoded = 0, failed = 0;
  for (const std::string& f : files) {
    for (size_t cut = 1; cut < f.size(); cut += 1 + f.size() / 60) {
      auto r = Decode(f.substr(0, cut));
      r.ok() ? ++decoded : ++failed;
    }
    for (int trial = 0; trial < 150; ++trial) {
      std::string c = f;
      const int flips = 1 + rng() % 8;
      for (int k = 0; k < flips; ++k) c[4 + rng() % (c.size() - 4)] = static_cast<char>(rng() & 255);
      auto r = Decode(c);
      if (r.ok()) {
        ++decoded;
        EXPECT_EQ(r->pixels.size(), static_cast<size_t>(r->width) * r->height * 3);
      } else {
        ++failed;
      }
    }
  }
  EXPECT_GT(failed, 0);
}

// ---------------------------------------------------------------------------------------------
// PNG encoding

TEST(EncodePng, RoundTripExact) {
  RgbImage im = Smooth(31, 9);
  im.pixels[5] = 1;
  std::string png;
  ASSERT_TRUE(EncodePng(im, &png).ok());
  auto back = Decode(png);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->width, 31);
  EXPECT_EQ(back->height, 9);
  EXPECT_EQ(back->pixels, im.pixels);
  const std::string path = ::testing::TempDir() + "/mineru_image_rt.png";
  ASSERT_TRUE(WritePngFile(im, path).ok());
  auto f = DecodeImageFile(path);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->pixels, im.pixels);
  RgbImage bad;
  bad.width = 3;
  bad.height = 3;
  EXPECT_FALSE(EncodePng(bad, &png).ok());
}

}  // namespace
}  // namespace mineru
