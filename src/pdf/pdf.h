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
  // Seconds one page render may take; 0 = no deadline. With a deadline each render runs on a
  // thread of its own, on a parse of the file of its own; past the deadline the page fails
  // (DeadlineExceeded) and the render is abandoned (it finishes on its own, holding nothing anyone
  // waits for). At most kMaxAbandonedRenders run abandoned in the process; while that many do,
  // further renders with a deadline fail (Unavailable) at once.
  double render_timeout_s = 0;
};

// Renders abandoned past their deadline that are still running (process-wide).
int AbandonedRenders();
constexpr int kMaxAbandonedRenders = 2;

class PdfDocument {
 public:
  // Errors: missing file, not a PDF, corrupt, encrypted (locked), no pages.
  static StatusOr<std::unique_ptr<PdfDocument>> Open(const std::string& path, const PdfLimits& limits = {});
  static StatusOr<std::unique_ptr<PdfDocument>> OpenFromMemory(std::string bytes,
                                                               const PdfLimits& limits = {});
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
  static StatusOr<std::unique_ptr<PdfDocument>> Finish(std::shared_ptr<const std::string> bytes,
                                                       const PdfLimits& limits);
  // One parsed poppler document over the file's bytes, with the lock that serialises its use.
  // Shared: an abandoned render keeps the handle it runs on alive.
  struct Handle;
  std::shared_ptr<Handle> handle() const;
  static std::shared_ptr<Handle> Load(std::shared_ptr<const std::string> bytes);
  StatusOr<RenderedPage> RenderAtScale(int index, double width_pt, double height_pt, double scale) const;
  // RenderAtScale's work on a given handle (no deadline).
  static StatusOr<RenderedPage> RenderOn(Handle& h, int index, RenderedPage out, const std::string& what);
  // Runs RenderOn on a thread of its own and waits at most limits_.render_timeout_s.
  StatusOr<RenderedPage> RenderWithDeadline(int index, RenderedPage out, const std::string& what) const;
  std::shared_ptr<const std::string> bytes_;  // the file; poppler reads it in place
  std::shared_ptr<Handle> handle_;            // size queries, text, renders without a deadline
  int num_pages_ = 0;
  PdfLimits limits_;
};

// True when the bytes start like a PDF ("%PDF-" within the first 1024 bytes).
bool LooksLikePdf(const std::string& head);

}  // namespace mineru
