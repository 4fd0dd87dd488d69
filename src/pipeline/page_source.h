// pipeline/page_source.h — an input file as a sequence of page images (PDF pages rendered one at a
// time, or one image), plus page ranges ("3-7,10").
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/status.h"
#include "image/decode.h"
#include "image/image.h"
#include "pdf/pdf.h"

namespace mineru::pipeline {

struct PageImage {
  RgbImage image;
  double width_pt = 0, height_pt = 0;  // page size in points
  double scale = 1;                    // pixels per point
};

struct InputLimits {
  PdfLimits pdf;
  DecodeLimits image;
  double dpi = 200;
  int max_side = 3500;
};

class InputDocument {
 public:
  // Detects the kind from the content (PDF magic, else an image decoder).
  static StatusOr<std::unique_ptr<InputDocument>> Open(const std::string& path,
                                                       const InputLimits& limits = {});

  int num_pages() const { return pdf_ ? pdf_->num_pages() : 1; }
  bool is_pdf() const { return pdf_ != nullptr; }
  // index 0-based. Images are treated as MinerU does: a page of W x H points rendered at 200 DPI.
  // Out of memory is an OutOfMemory status (a PDF page is retried at half the DPI first: pdf/pdf.h).
  StatusOr<PageImage> LoadPage(int index) const;
  // The PDF text layer of a page (empty for images).
  StatusOr<std::vector<PdfTextBox>> PageText(int index) const;

 private:
  StatusOr<PageImage> LoadPageOrThrow(int index) const;

  std::unique_ptr<PdfDocument> pdf_;
  RgbImage image_;
  InputLimits limits_;
};

// "3-7,10" (1-based, inclusive) -> sorted 0-based indices below num_pages. Empty spec = all pages.
// Errors on malformed specs or when nothing is selected.
StatusOr<std::vector<int>> ParsePageRanges(const std::string& spec, int num_pages);

}  // namespace mineru::pipeline
