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
  // Seconds one page render may take; 0 = no deadline. Past it the page fails (DeadlineExceeded).
  // With a render helper (below) the render runs in a child process that is killed (SIGKILL) at
  // the deadline: nothing of it goes on, and other renders are unaffected. Without one it runs on a
  // thread of its own, on a parse of the file of its own, and is abandoned at the deadline: it
  // finishes on its own (holding nothing anyone waits for, but a core until it ends); at most
  // kMaxAbandonedRenders run abandoned in the process, and while that many do, further renders
  // with a deadline and no helper fail (Unavailable) at once.
  double render_timeout_s = 0;
  // The program that renders a page with a deadline in a child process: argv[0] its path (no PATH
  // search), the rest the arguments it needs before the request's (it must end up in
  // RunRenderHelper; mineru-cpp does with {"/proc/self/exe", kRenderHelperArg}). Empty: the
  // process's default (SetDefaultRenderHelper) when there is one, else renders run on threads.
  std::vector<std::string> render_helper;
};

// Renders abandoned past their deadline that are still running (process-wide; only renders without
// a render helper are ever abandoned).
int AbandonedRenders();
constexpr int kMaxAbandonedRenders = 2;

// The render helper of documents whose PdfLimits name none (see PdfLimits::render_helper); empty
// (the initial value) for none. Set it once at start, before documents are opened: a document
// takes the value in force when it is opened.
void SetDefaultRenderHelper(std::vector<std::string> argv);

// mineru-cpp's hidden first argument that makes it a render helper (cli/main.cc).
constexpr char kRenderHelperArg[] = "__render-page";

// The child side of a render with a helper, for the helper's main(): `args` are the request's
// arguments (those after the helper's own). Reads the PDF from stdin (a sealed memory file the
// parent shares, mapped in place), renders the page as RenderPage does in process (the same code:
// byte-identical pixels), writes the answer to stdout (pdf/render_child.h's framing: the pixels or
// a StatusCode and one-line message) and ends the process with _exit (0 once the answer is
// written; 2 for arguments that are not a request; 3 when the answer cannot be written), so that
// nothing of the process's static state is torn down after the answer. Before reading anything it
// closes every inherited descriptor above 2, asks for SIGKILL if its parent dies, and limits its
// CPU time (RLIMIT_CPU, a little over the parent's deadline), core dumps (none) and, after the
// program is loaded, its address space (RLIMIT_AS: what it uses plus the request's budget), a
// second fence behind the parent's deadline and budget checks.
[[noreturn]] void RunRenderHelper(int argc, char** args);

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
  // the peak is probed before it runs. With a deadline and a render helper (PdfLimits), the page
  // is rendered in a child process (see render_timeout_s): its answer is checked (no more pixels
  // than the render was estimated at) before it is trusted; a helper that crashes, is killed or
  // answers garbage fails the page with DataLoss, never this process; a helper that cannot be
  // started fails it with Unavailable. The pixels are the same either way, byte for byte.
  StatusOr<RenderedPage> RenderPage(int index, double dpi = 200, int max_side = 3500) const;
  // Estimated peak bytes per output pixel of a render: poppler's 4-byte bitmap, its 3-byte image
  // and our 3-byte copy (the bitmap is gone by the time we copy).
  static constexpr size_t kRenderBytesPerPixel = 7;
  StatusOr<std::vector<PdfTextBox>> PageText(int index) const;
  // Page size in points (rotation applied).
  StatusOr<std::pair<double, double>> PageSize(int index) const;

 private:
  PdfDocument() = default;
  // The file's bytes, read in place by poppler: a string, or (for render helpers) a sealed memory
  // file mapped read-only, whose descriptor the helpers get as stdin.
  struct Bytes;
  static StatusOr<std::unique_ptr<PdfDocument>> Finish(std::shared_ptr<const Bytes> bytes,
                                                       const PdfLimits& limits);
  // One parsed poppler document over the file's bytes, with the lock that serialises its use.
  // Shared: an abandoned render keeps the handle it runs on alive.
  struct Handle;
  std::shared_ptr<Handle> handle() const;
  static std::shared_ptr<Handle> Load(std::shared_ptr<const Bytes> bytes);
  StatusOr<RenderedPage> RenderAtScale(int index, double width_pt, double height_pt, double scale) const;
  // RenderAtScale's work on a given handle (no deadline).
  static StatusOr<RenderedPage> RenderOn(Handle& h, int index, RenderedPage out, const std::string& what);
  // Runs RenderOn on a thread of its own and waits at most limits_.render_timeout_s (no helper).
  StatusOr<RenderedPage> RenderOnThread(int index, RenderedPage out, const std::string& what) const;
  // Has the helper render the page in a child process killed at limits_.render_timeout_s;
  // est_pixels bounds the answer, est_bytes sizes the helper's memory fence.
  StatusOr<RenderedPage> RenderInChild(int index, RenderedPage out, const std::string& what,
                                       double est_pixels, double est_bytes) const;
  friend void RunRenderHelper(int argc, char** args);
  std::shared_ptr<const Bytes> bytes_;  // the file; poppler reads it in place
  std::shared_ptr<Handle> handle_;      // size queries, text, renders without a deadline
  int num_pages_ = 0;
  PdfLimits limits_;  // render_helper resolved (the default applied) at Open
};

// True when the bytes start like a PDF ("%PDF-" within the first 1024 bytes).
bool LooksLikePdf(const std::string& head);

}  // namespace mineru
