#include "pdf/pdf.h"

#include <poppler-document.h>
#include <poppler-global.h>
#include <poppler-image.h>
#include <poppler-page-renderer.h>
#include <poppler-page.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>

#include "base/mapped_file.h"
#include "base/utf8.h"

namespace mineru {
namespace {

// A blank one-page PDF (poppler rebuilds its missing cross-reference table).
constexpr char kBlankPdf[] =
    "%PDF-1.1\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n"
    "3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 8 8]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n";

// Once per process, before any document is parsed: silences poppler's error printing, and draws a
// blank page. Poppler creates two process-wide colour profiles (sRGB and XYZ, in GfxState's
// constructor) the first time any page is drawn or its text read, without a lock: two threads doing
// that first at once both create them and one frees the other's (a data race, a double free at
// worst). Drawing once here, while every other first use waits on the once_flag, creates them
// before two threads can.
void InitPoppler() {
  static std::once_flag once;
  std::call_once(once, [] {
    poppler::set_debug_error_function([](const std::string&, void*) {}, nullptr);
    std::unique_ptr<poppler::document> blank(
        poppler::document::load_from_raw_data(kBlankPdf, static_cast<int>(sizeof(kBlankPdf) - 1)));
    std::unique_ptr<poppler::page> page(blank ? blank->create_page(0) : nullptr);
    if (page) poppler::page_renderer().render_page(page.get(), 72.0, 72.0);
  });
}

// Text from the PDF is outside data: ill-formed sequences become U+FFFD here, so everything
// downstream (block text, JSON output) sees valid UTF-8.
std::string Utf8(const poppler::ustring& s) {
  poppler::byte_array b = s.to_utf8();
  std::string out;
  utf8::AppendLossy(std::string_view(b.data(), b.size()), /*final=*/true, &out);
  return out;
}

}  // namespace

bool LooksLikePdf(const std::string& head) {
  return head.substr(0, std::min<size_t>(head.size(), 1024)).find("%PDF-") != std::string::npos;
}

struct PdfDocument::Handle {
  std::mutex mu;                             // poppler documents are not thread-safe
  std::shared_ptr<const std::string> bytes;  // poppler reads them in place: they live as long
  std::unique_ptr<poppler::document> doc;    // null when the bytes do not parse
};

namespace {

std::atomic<int> g_abandoned{0};

}  // namespace

std::shared_ptr<PdfDocument::Handle> PdfDocument::Load(std::shared_ptr<const std::string> bytes) {
  InitPoppler();
  auto h = std::make_shared<Handle>();
  h->doc.reset(poppler::document::load_from_raw_data(bytes->data(), static_cast<int>(bytes->size())));
  h->bytes = std::move(bytes);
  return h;
}

int AbandonedRenders() { return g_abandoned.load(); }

PdfDocument::~PdfDocument() = default;

StatusOr<std::unique_ptr<PdfDocument>> PdfDocument::Open(const std::string& path, const PdfLimits& limits) {
  MINERU_ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(path, size_t(2) << 30));
  return OpenFromMemory(std::move(bytes), limits);
}

StatusOr<std::unique_ptr<PdfDocument>> PdfDocument::OpenFromMemory(std::string bytes,
                                                                   const PdfLimits& limits) {
  if (bytes.empty()) return InvalidArgumentError("empty file");
  if (!LooksLikePdf(bytes)) return InvalidArgumentError("not a PDF file");
  if (bytes.size() > static_cast<size_t>(INT32_MAX)) return ResourceExhaustedError("PDF larger than 2 GB");
  return Finish(std::make_shared<const std::string>(std::move(bytes)), limits);
}

StatusOr<std::unique_ptr<PdfDocument>> PdfDocument::Finish(std::shared_ptr<const std::string> bytes,
                                                           const PdfLimits& limits) {
  std::shared_ptr<Handle> h = Load(bytes);
  if (h->doc == nullptr) return DataLossError("the PDF is corrupt or unreadable");
  std::unique_ptr<PdfDocument> d(new PdfDocument());
  d->bytes_ = std::move(bytes);
  d->limits_ = limits;
  if (h->doc->is_locked()) return InvalidArgumentError("the PDF is encrypted (password protected)");
  d->num_pages_ = h->doc->pages();
  d->handle_ = std::move(h);
  if (d->num_pages_ <= 0) return InvalidArgumentError("the PDF has no pages");
  if (d->num_pages_ > limits.max_pages) {
    return ResourceExhaustedError("the PDF has " + std::to_string(d->num_pages_) +
                                  " pages, over the limit of " + std::to_string(limits.max_pages));
  }
  return d;
}

std::shared_ptr<PdfDocument::Handle> PdfDocument::handle() const { return handle_; }

StatusOr<std::pair<double, double>> PdfDocument::PageSize(int index) const {
  if (index < 0 || index >= num_pages_) return InvalidArgumentError("page index out of range");
  const std::shared_ptr<Handle> handle_now = handle();
  std::lock_guard<std::mutex> lock(handle_now->mu);
  std::unique_ptr<poppler::page> p(handle_now->doc->create_page(index));
  if (!p) return DataLossError("cannot read page " + std::to_string(index + 1));
  poppler::rectf r = p->page_rect(poppler::crop_box);
  double w = r.width(), h = r.height();
  if (p->orientation() == poppler::page::landscape || p->orientation() == poppler::page::seascape)
    std::swap(w, h);
  if (!(w > 0) || !(h > 0)) return DataLossError("page " + std::to_string(index + 1) + " has an empty size");
  if (w > limits_.max_page_side_pt || h > limits_.max_page_side_pt) {
    return ResourceExhaustedError("page " + std::to_string(index + 1) +
                                  " is larger than the page-size limit");
  }
  return std::make_pair(w, h);
}

StatusOr<RenderedPage> PdfDocument::RenderPage(int index, double dpi, int max_side) const {
  MINERU_ASSIGN_OR_RETURN(auto size, PageSize(index));
  double scale = dpi / 72.0;
  const double long_side = std::max(size.first, size.second);
  if (long_side * scale > max_side) scale = max_side / long_side;
  auto page = RenderAtScale(index, size.first, size.second, scale);
  if (page.ok() || page.status().code() != StatusCode::kOutOfMemory) return page;
  // Once more at half the DPI (a quarter of the pixels); see the header.
  auto smaller = RenderAtScale(index, size.first, size.second, scale / 2);
  if (smaller.ok() || smaller.status().code() != StatusCode::kOutOfMemory) return smaller;
  return Status(StatusCode::kOutOfMemory, page.status().message() + "; at half the resolution too");
}

StatusOr<RenderedPage> PdfDocument::RenderAtScale(int index, double width_pt, double height_pt,
                                                  double scale) const {
  RenderedPage out;
  out.width_pt = width_pt;
  out.height_pt = height_pt;
  out.scale = scale;
  const double est_pixels = std::ceil(width_pt * scale + 1) * std::ceil(height_pt * scale + 1);
  const double est_bytes = est_pixels * kRenderBytesPerPixel;
  const std::string what = "rendering page " + std::to_string(index + 1) + " at " +
                           std::to_string(static_cast<int>(std::lround(scale * 72))) + " DPI (about " +
                           std::to_string(static_cast<long long>(est_bytes / (1 << 20))) + " MB)";
  if (limits_.max_render_bytes > 0 && est_bytes > static_cast<double>(limits_.max_render_bytes)) {
    return OutOfMemoryError(what + ": over the render budget of " +
                            std::to_string(limits_.max_render_bytes >> 20) + " MB");
  }
  // Poppler's own allocations may abort instead of failing: probe the peak first.
  if (est_bytes >= static_cast<double>(SIZE_MAX / 2)) return OutOfMemoryError(what);
  if (void* probe = std::malloc(static_cast<size_t>(est_bytes))) {
    std::free(probe);
  } else {
    return OutOfMemoryError(what);
  }
  if (limits_.render_timeout_s > 0) return RenderWithDeadline(index, std::move(out), what);
  return RenderOn(*handle(), index, std::move(out), what);
}

StatusOr<RenderedPage> PdfDocument::RenderWithDeadline(int index, RenderedPage out,
                                                       const std::string& what) const {
  if (g_abandoned.load() >= kMaxAbandonedRenders) {
    return UnavailableError(what + ": " + std::to_string(kMaxAbandonedRenders) +
                            " earlier renders that passed their deadline are still running; try again later");
  }
  struct Task {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false, abandoned = false;
    StatusOr<RenderedPage> result = InternalError("not rendered");
  };
  auto task = std::make_shared<Task>();
  // A document of its own for this render: an abandoned render then holds no lock anyone else
  // waits on (size queries, text, later pages all use the shared one).
  std::shared_ptr<Handle> h = Load(bytes_);
  if (!h->doc) return DataLossError(what + ": the PDF could not be parsed again");
  try {
    // The thread owns what it uses (the handle, which holds the parsed document, and the task):
    // nothing of this object, which may be gone by the time an abandoned render ends.
    std::thread([h, task, index, out = std::move(out), what]() mutable {
      auto r = RenderOn(*h, index, std::move(out), what);
      std::lock_guard<std::mutex> lock(task->mu);
      task->result = std::move(r);
      task->done = true;
      if (task->abandoned) --g_abandoned;
      task->cv.notify_all();
    }).detach();
  } catch (const std::system_error&) {
    return UnavailableError(what + ": no thread for the render");
  }
  std::unique_lock<std::mutex> lock(task->mu);
  const auto limit = std::chrono::duration<double>(limits_.render_timeout_s);
  if (task->cv.wait_for(lock, limit, [&] { return task->done; })) return std::move(task->result);
  task->abandoned = true;
  ++g_abandoned;
  lock.unlock();
  char secs[32];
  std::snprintf(secs, sizeof(secs), "%g", limits_.render_timeout_s);
  return DeadlineExceededError(what + " took longer than " + secs + " s; abandoned");
}

StatusOr<RenderedPage> PdfDocument::RenderOn(Handle& handle, int index, RenderedPage out,
                                             const std::string& what) {
  std::lock_guard<std::mutex> lock(handle.mu);
  std::unique_ptr<poppler::page> p(handle.doc->create_page(index));
  if (!p) return DataLossError("cannot read page " + std::to_string(index + 1));
  poppler::page_renderer r;
  r.set_render_hints(poppler::page_renderer::antialiasing | poppler::page_renderer::text_antialiasing |
                     poppler::page_renderer::text_hinting);
  r.set_image_format(poppler::image::format_rgb24);
  r.set_paper_color(0xffffffff);
  poppler::image img = r.render_page(p.get(), out.scale * 72.0, out.scale * 72.0);
  if (!img.is_valid() || img.width() <= 0 || img.height() <= 0) {
    return DataLossError("page " + std::to_string(index + 1) + " could not be rendered");
  }
  const int w = img.width(), h = img.height();
  out.image.width = w;
  out.image.height = h;
  try {
    out.image.pixels.resize(static_cast<size_t>(w) * h * 3);
  } catch (const std::bad_alloc&) {
    return OutOfMemoryError(what);
  }
  const char* src = img.const_data();
  const int stride = img.bytes_per_row();
  for (int y = 0; y < h; ++y) {
    const uint8_t* row = reinterpret_cast<const uint8_t*>(src + static_cast<size_t>(y) * stride);
    uint8_t* dst = out.image.pixels.data() + static_cast<size_t>(y) * w * 3;
    if (img.format() == poppler::image::format_rgb24) {
      // Packed R, G, B bytes.
      std::memcpy(dst, row, static_cast<size_t>(w) * 3);
    } else if (img.format() == poppler::image::format_argb32) {
      // 32-bit 0xAARRGGBB words, little-endian in memory: B, G, R, A.
      for (int x = 0; x < w; ++x) {
        dst[3 * x] = row[4 * x + 2];
        dst[3 * x + 1] = row[4 * x + 1];
        dst[3 * x + 2] = row[4 * x];
      }
    } else if (img.format() == poppler::image::format_bgr24) {
      for (int x = 0; x < w; ++x) {
        dst[3 * x] = row[3 * x + 2];
        dst[3 * x + 1] = row[3 * x + 1];
        dst[3 * x + 2] = row[3 * x];
      }
    } else {
      return UnimplementedError("unexpected poppler image format");
    }
  }
  return out;
}

StatusOr<std::vector<PdfTextBox>> PdfDocument::PageText(int index) const {
  const std::shared_ptr<Handle> h = handle();
  std::lock_guard<std::mutex> lock(h->mu);
  if (index < 0 || index >= num_pages_) return InvalidArgumentError("page index out of range");
  std::unique_ptr<poppler::page> p(h->doc->create_page(index));
  if (!p) return DataLossError("cannot read page " + std::to_string(index + 1));
  std::vector<PdfTextBox> out;
  for (const poppler::text_box& b : p->text_list()) {
    poppler::rectf r = b.bbox();
    PdfTextBox t;
    t.text = Utf8(b.text());
    t.x0 = r.left();
    t.y0 = r.top();
    t.x1 = r.right();
    t.y1 = r.bottom();
    if (!t.text.empty()) out.push_back(std::move(t));
  }
  return out;
}

}  // namespace mineru
