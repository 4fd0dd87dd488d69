// pdf/pdf.h — PDF pages as images (poppler), and the text layer for the hybrid text source.
//
// Rendering follows MinerU: 200 DPI, the long side capped at 3500 px (the scale shrinks so the
// long side fits). A document is opened once; pages are rendered one at a time so a long PDF never
// holds more than the page in flight. Thread-safe (poppler calls are serialised per document).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "image/image.h"

namespace poppler {
class document;
}

namespace mineru {

struct RenderedPage {
  RgbImage image;
  double width_pt = 0, height_pt = 0;  // page size in points as displayed (rotation applied)
  double scale = 1;                    // pixels per point
};

// One word/run of the text layer, in points from the page's top-left corner.
struct PdfTextBox {
  std::string text;  // valid UTF-8
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

struct PdfLimits {
  int max_pages = 100000;
  double max_page_side_pt = 200000;  // larger MediaBoxes are refused
  // Memory one page render may take (estimated at kRenderBytesPerPixel per output pixel); 0 = no
  // budget. A render over the budget is treated as out of memory (see RenderPage).
  size_t max_render_bytes = 0;
};

class PdfDocument {
 public:
  // Errors: missing file, not a PDF, corrupt, encrypted (locked), no pages.
  static StatusOr<std::unique_ptr<PdfDocument>> Open(const std::string& path, const PdfLimits& limits = {});
  static StatusOr<std::unique_ptr<PdfDocument>> OpenFromMemory(std::string bytes, const PdfLimits& limits = {});
  ~PdfDocument();

  int num_pages() const { return num_pages_; }
  // index is 0-based. Out of memory (an allocation fails, a probe allocation of the estimated
  // peak fails, or the estimate is over limits.max_render_bytes) is retried once at half the
  // resolution (a quarter of the memory): the page keeps its size in points and RenderedPage::scale
  // says the lower resolution, so layout boxes and crops stay where they were, with less detail.
  // If that fails too: OutOfMemory. Poppler itself may abort on a failed allocation, which is why
  // the peak is probed before it runs.
  StatusOr<RenderedPage> RenderPage(int index, double dpi = 200, int max_side = 3500) const;
  // Estimated peak bytes per output pixel of a render: poppler's 4-byte bitmap, its 3-byte image
  // and our 3-byte copy (the bitmap is gone by the time we copy).
  static constexpr size_t kRenderBytesPerPixel = 7;
  StatusOr<std::vector<PdfTextBox>> PageText(int index) const;
  // Page size in points (rotation applied).
  StatusOr<std::pair<double, double>> PageSize(int index) const;

 private:
  PdfDocument() = default;
  static StatusOr<std::unique_ptr<PdfDocument>> Finish(poppler::document* doc, std::string bytes,
                                                       const PdfLimits& limits);
  StatusOr<RenderedPage> RenderAtScale(int index, double width_pt, double height_pt, double scale) const;
  std::string bytes_;  // keeps in-memory data alive for poppler
  poppler::document* doc_ = nullptr;
  int num_pages_ = 0;
  PdfLimits limits_;
  mutable std::mutex mu_;
};

// True when the bytes start like a PDF ("%PDF-" within the first 1024 bytes).
bool LooksLikePdf(const std::string& head);

}  // namespace mineru
