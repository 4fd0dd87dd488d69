// A progressive JPEG whose last scan is repeated many times (each one is only a warning to libjpeg,
// and each re-decodes the image): refused past the scan limit instead of holding a decoder.
#include <gtest/gtest.h>

#include <jpeglib.h>
#include <cstddef>
#include <cstdio>

#include <string>
#include <vector>

#include "image/decode.h"

namespace mineru {
namespace {

std::string ProgressiveJpeg(int w, int h) {
  jpeg_compress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* mem = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &mem, &size);
  c.image_width = w;
  c.image_height = h;
  c.input_components = 1;
  c.in_color_space = JCS_GRAYSCALE;
  jpeg_set_defaults(&c);
  jpeg_simple_progression(&c);
  jpeg_start_compress(&c, TRUE);
  std::vector<unsigned char> row(w);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) row[x] = static_cast<unsigned char>((x * 7 + y * 3) & 255);
    JSAMPROW r = row.data();
    jpeg_write_scanlines(&c, &r, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  std::string out(reinterpret_cast<char*>(mem), size);
  std::free(mem);
  return out;
}

// The same file with its last scan (SOS segment and entropy data, up to EOI) repeated `extra` times.
std::string RepeatLastScan(const std::string& jpg, int extra) {
  const size_t sos = jpg.rfind("\xFF\xDA");
  const size_t eoi = jpg.rfind("\xFF\xD9");
  if (sos == std::string::npos || eoi == std::string::npos || eoi < sos) return "";
  const std::string scan = jpg.substr(sos, eoi - sos);
  std::string out = jpg.substr(0, eoi);
  for (int i = 0; i < extra; ++i) out += scan;
  return out + "\xFF\xD9";
}

TEST(JpegScans, ManyScansAreRefused) {
  const std::string ok = ProgressiveJpeg(64, 64);
  auto img = DecodeImage(reinterpret_cast<const uint8_t*>(ok.data()), ok.size());
  ASSERT_TRUE(img.ok()) << img.status().ToString();  // an ordinary progressive file (about 10 scans)
  const std::string bomb = RepeatLastScan(ok, 500);
  ASSERT_FALSE(bomb.empty());
  auto bad = DecodeImage(reinterpret_cast<const uint8_t*>(bomb.data()), bomb.size());
  ASSERT_FALSE(bad.ok()) << "decoded " << bomb.size() << " bytes of 510 scans";
  EXPECT_NE(bad.status().message().find("scans"), std::string::npos) << bad.status().ToString();
}

}  // namespace
}  // namespace mineru
