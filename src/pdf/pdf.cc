#include "pdf/pdf.h"

#include <poppler-document.h>
#include <poppler-global.h>
#include <poppler-image.h>
#include <poppler-page-renderer.h>
#include <poppler-page.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>

#include "base/mapped_file.h"
#include "base/utf8.h"
#include "pdf/render_child.h"

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

struct PdfDocument::Bytes {
  const char* data = nullptr;
  size_t size = 0;
  int fd = -1;          // the sealed memory file (render helpers read it), or -1
  std::string owned;    // the bytes, when there is no memory file
  void* map = nullptr;  // the memory file's read-only mapping

  Bytes() = default;
  Bytes(const Bytes&) = delete;
  Bytes& operator=(const Bytes&) = delete;
  ~Bytes() {
    if (map != nullptr) ::munmap(map, size);
    if (fd >= 0) ::close(fd);
  }

  static std::shared_ptr<const Bytes> FromString(std::string s) {
    auto b = std::make_shared<Bytes>();
    b->owned = std::move(s);
    b->data = b->owned.data();
    b->size = b->owned.size();
    return b;
  }

  // Maps `fd` (which it then owns) read-only: the memory file a document keeps for its helpers,
  // or, in a helper, the stdin it was given.
  static StatusOr<std::shared_ptr<const Bytes>> Map(int fd) {
    auto b = std::make_shared<Bytes>();
    b->fd = fd;
    struct stat st {};
    if (::fstat(fd, &st) != 0) return IoError(std::string("fstat of the PDF: ") + std::strerror(errno));
    if (st.st_size <= 0) return DataLossError("the PDF given to the render helper is empty");
    b->size = static_cast<size_t>(st.st_size);
    void* m = ::mmap(nullptr, b->size, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) return IoError(std::string("mapping the PDF: ") + std::strerror(errno));
    b->map = m;
    b->data = static_cast<const char*>(m);
    return std::shared_ptr<const Bytes>(std::move(b));
  }

  // The bytes moved into a sealed memory file (one copy in memory, as with a string) that every
  // render helper of the document is handed as stdin: nothing is copied per render, and the seals
  // keep any helper from changing what the others (and this process) read.
  static StatusOr<std::shared_ptr<const Bytes>> InMemoryFile(std::string s) {
    const int fd = ::memfd_create("mineru-pdf", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return IoError(std::string("memfd_create for the PDF: ") + std::strerror(errno));
    for (size_t off = 0; off < s.size();) {
      const ssize_t put = ::write(fd, s.data() + off, s.size() - off);
      if (put < 0 && errno == EINTR) continue;
      if (put <= 0) {
        const int err = errno;
        ::close(fd);
        return IoError(std::string("writing the PDF to a memory file: ") + std::strerror(err));
      }
      off += static_cast<size_t>(put);
    }
    if (::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
      const int err = errno;
      ::close(fd);
      return IoError(std::string("sealing the PDF's memory file: ") + std::strerror(err));
    }
    s = std::string();  // the memory file holds the bytes now
    return Map(fd);
  }
};

struct PdfDocument::Handle {
  std::mutex mu;                           // poppler documents are not thread-safe
  std::shared_ptr<const Bytes> bytes;      // poppler reads them in place: they live as long
  std::unique_ptr<poppler::document> doc;  // null when the bytes do not parse
};

namespace {

std::atomic<int> g_abandoned{0};

std::mutex g_default_helper_mu;
std::vector<std::string>& DefaultHelper() {
  // Never destroyed: threads may still open documents while the process exits.
  static auto* helper = new std::vector<std::string>();
  return *helper;
}

}  // namespace

void SetDefaultRenderHelper(std::vector<std::string> argv) {
  std::lock_guard<std::mutex> lock(g_default_helper_mu);
  DefaultHelper() = std::move(argv);
}

std::shared_ptr<PdfDocument::Handle> PdfDocument::Load(std::shared_ptr<const Bytes> bytes) {
  InitPoppler();
  auto h = std::make_shared<Handle>();
  h->doc.reset(poppler::document::load_from_raw_data(bytes->data, static_cast<int>(bytes->size)));
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
  PdfLimits resolved = limits;
  if (resolved.render_helper.empty()) {
    std::lock_guard<std::mutex> lock(g_default_helper_mu);
    resolved.render_helper = DefaultHelper();
  }
  if (resolved.render_timeout_s > 0 && !resolved.render_helper.empty()) {
    MINERU_ASSIGN_OR_RETURN(std::shared_ptr<const Bytes> in_file, Bytes::InMemoryFile(std::move(bytes)));
    return Finish(std::move(in_file), resolved);
  }
  return Finish(Bytes::FromString(std::move(bytes)), resolved);
}

StatusOr<std::unique_ptr<PdfDocument>> PdfDocument::Finish(std::shared_ptr<const Bytes> bytes,
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
  if (limits_.render_timeout_s > 0 && bytes_->fd >= 0) {
    return RenderInChild(index, std::move(out), what, est_pixels, est_bytes);
  }
  if (limits_.render_timeout_s > 0) return RenderOnThread(index, std::move(out), what);
  return RenderOn(*handle(), index, std::move(out), what);
}

namespace {

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", s);
  return buf;
}

// A render helper that did not answer in full (`why`): stops it if it still runs, reaps it and
// says what happened. Past the deadline (or killed by its CPU limit, which it reaches only past
// the deadline): DeadlineExceeded; an answer too large to take here: OutOfMemory; anything else
// (a crash, a cut or malformed answer): DataLoss for this page, nothing more.
Status HelperFailed(pdf_internal::ChildProcess& child, const Status& why, const std::string& what,
                    double timeout_s) {
  const int st = child.Kill();
  const bool out_of_cpu = st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGXCPU;
  if (why.code() == StatusCode::kDeadlineExceeded || out_of_cpu) {
    return DeadlineExceededError(what + " took longer than " + Seconds(timeout_s) + " s; stopped");
  }
  if (why.code() == StatusCode::kOutOfMemory) return OutOfMemoryError(what);
  const bool stopped_here = child.stopped() && st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
  return DataLossError(what + ": " + why.message() + "; the render helper " +
                       (stopped_here ? "was stopped" : pdf_internal::DescribeWaitStatus(st)));
}

}  // namespace

StatusOr<RenderedPage> PdfDocument::RenderInChild(int index, RenderedPage out, const std::string& what,
                                                  double est_pixels, double est_bytes) const {
  using pdf_internal::ChildProcess;
  // Capped so that the deadline stays a representable time point (a year is no deadline anyway).
  const double timeout_s = std::min(limits_.render_timeout_s, 365.0 * 86400);
  const auto deadline =
      ChildProcess::Clock::now() +
      std::chrono::duration_cast<ChildProcess::Clock::duration>(std::chrono::duration<double>(timeout_s));
  // The request: page, scale (hexadecimal: the exact double), CPU seconds (a little over the
  // deadline: the wall-clock deadline here acts first) and the address space the helper may add to
  // what its loaded program uses: twice the render's budget, twice the file (poppler's parse), and
  // a fixed slack for fonts and the like. A coarse fence against memory bombs, not an estimate.
  const double budget = std::max(est_bytes, static_cast<double>(limits_.max_render_bytes));
  const double memory =
      std::min(2 * budget + 2 * static_cast<double>(bytes_->size) + double(1 << 30), 0x1p60);
  char scale[64];
  std::snprintf(scale, sizeof(scale), "%a", out.scale);
  std::vector<std::string> argv = limits_.render_helper;
  argv.push_back(std::to_string(index));
  argv.push_back(scale);
  argv.push_back(std::to_string(static_cast<long long>(std::ceil(timeout_s)) + 1));
  argv.push_back(std::to_string(static_cast<unsigned long long>(memory)));
  auto child = ChildProcess::Spawn(argv, bytes_->fd);
  if (!child.ok()) return Status(child.status().code(), what + ": " + child.status().message());
  auto answer = pdf_internal::ReadAnswer(**child, est_pixels, deadline);
  if (!answer.ok()) return HelperFailed(**child, answer.status(), what, timeout_s);
  // The output has ended, so the helper is exiting: a short grace even when the answer came just
  // before the deadline.
  const int st = (*child)->Wait(std::max(deadline, ChildProcess::Clock::now() + std::chrono::seconds(1)));
  if (st != -1 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
    return DataLossError(what + ": the render helper " + pdf_internal::DescribeWaitStatus(st) +
                         " after answering");
  }
  if (answer->status.code() == StatusCode::kOutOfMemory) return OutOfMemoryError(what);
  if (!answer->status.ok()) return answer->status;
  out.image = std::move(answer->image);
  return out;
}

StatusOr<RenderedPage> PdfDocument::RenderOnThread(int index, RenderedPage out,
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
  return DeadlineExceededError(what + " took longer than " + Seconds(limits_.render_timeout_s) +
                               " s; abandoned");
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

namespace {

// A render helper's request (see RenderInChild, which writes it).
struct HelperRequest {
  int index = 0;
  double scale = 0;
  rlim_t cpu_seconds = 0;
  rlim_t memory_bytes = 0;
};

bool ParseHelperRequest(int argc, char** args, HelperRequest* r) {
  if (argc != 4) return false;
  char* end = nullptr;
  errno = 0;
  const long index = std::strtol(args[0], &end, 10);
  if (*end != '\0' || errno != 0 || index < 0 || index > INT_MAX) return false;
  r->index = static_cast<int>(index);
  r->scale = std::strtod(args[1], &end);
  if (*end != '\0' || !std::isfinite(r->scale) || !(r->scale > 0)) return false;
  const unsigned long long cpu = std::strtoull(args[2], &end, 10);
  if (*end != '\0' || errno != 0 || cpu == 0) return false;
  const unsigned long long memory = std::strtoull(args[3], &end, 10);
  if (*end != '\0' || errno != 0 || memory == 0) return false;
  r->cpu_seconds = static_cast<rlim_t>(cpu);
  r->memory_bytes = static_cast<rlim_t>(memory);
  return true;
}

// Lowers a limit to `soft` (and the hard limit to `hard`), never above what is already allowed.
void LowerLimit(int resource, rlim_t soft, rlim_t hard) {
  rlimit now{};
  if (::getrlimit(resource, &now) != 0) return;
  rlimit want{std::min(soft, now.rlim_max), std::min(hard, now.rlim_max)};
  want.rlim_cur = std::min(want.rlim_cur, want.rlim_max);
  ::setrlimit(resource, &want);
}

// The address space this process uses now (bytes; 0 when unknown).
rlim_t AddressSpaceInUse() {
  std::FILE* f = std::fopen("/proc/self/statm", "re");
  if (f == nullptr) return 0;
  unsigned long long pages = 0;
  const bool ok = std::fscanf(f, "%llu", &pages) == 1;
  std::fclose(f);
  const long page = ::sysconf(_SC_PAGESIZE);
  return ok && page > 0 ? static_cast<rlim_t>(pages) * static_cast<rlim_t>(page) : 0;
}

// Sanitizers reserve terabytes of shadow address space as they go: no RLIMIT_AS under them.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// The helper's fences, before it reads anything: no descriptor of its parent but 0-2 (the
// parent's are close-on-exec, but a library may have opened one without), SIGKILL when the thread
// that started it ends (it waits for the helper, so only when the parent process died), no core
// dumps, and CPU time a little over the parent's deadline (SIGXCPU, then SIGKILL a second later).
void FenceHelper(const HelperRequest& r) {
  if (::close_range(3, ~0U, 0) != 0) {
    const long most = std::min(::sysconf(_SC_OPEN_MAX), 65536L);
    for (int fd = 3; fd < most; ++fd) ::close(fd);
  }
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  LowerLimit(RLIMIT_CORE, 0, 0);
  LowerLimit(RLIMIT_CPU, r.cpu_seconds, r.cpu_seconds + 1);
}

[[noreturn]] void EndHelper(int fd, const Status& status, const RgbImage* image) {
  const bool written = pdf_internal::WriteAnswer(fd, status, image);
  ::_exit(written ? 0 : 3);
}

}  // namespace

void RunRenderHelper(int argc, char** args) {
  HelperRequest r;
  if (!ParseHelperRequest(argc, args, &r)) {
    std::fprintf(stderr, "render helper: expected PAGE SCALE CPU_SECONDS MEMORY_BYTES\n");
    ::_exit(2);
  }
  FenceHelper(r);
  auto bytes = PdfDocument::Bytes::Map(/*fd=*/0);
  if (!bytes.ok()) EndHelper(1, bytes.status(), nullptr);
  InitPoppler();
  // The program, its libraries and the mapped file are in place: from here on the address space
  // may grow by the request's budget only (poppler's allocations fail, or it aborts, past it).
  if (const rlim_t in_use = AddressSpaceInUse(); in_use > 0 && !kSanitized) {
    const rlim_t cap = in_use + std::min<rlim_t>(r.memory_bytes, RLIM_INFINITY - in_use - 1);
    LowerLimit(RLIMIT_AS, cap, cap);
  }
  std::shared_ptr<PdfDocument::Handle> h = PdfDocument::Load(std::move(bytes).value());
  if (!h->doc) EndHelper(1, DataLossError("the render helper could not parse the PDF"), nullptr);
  RenderedPage out;
  out.scale = r.scale;
  const std::string what = "rendering page " + std::to_string(r.index + 1);
  StatusOr<RenderedPage> page = OutOfMemoryError(what);
  try {
    page = PdfDocument::RenderOn(*h, r.index, std::move(out), what);
  } catch (const std::bad_alloc&) {
    EndHelper(1, OutOfMemoryError(what), nullptr);
  }
  if (!page.ok()) EndHelper(1, page.status(), nullptr);
  EndHelper(1, Status::Ok(), &page->image);
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
