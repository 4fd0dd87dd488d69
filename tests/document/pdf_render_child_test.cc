// Renders with a deadline in a child process (pdf/pdf.h, PdfLimits::render_helper): a hostile page
// is stopped at its deadline and leaves nothing running; the child's pixels are the in-process
// render's, byte for byte; a helper that crashes or answers garbage is a clean error for that page.
// The helper is tests/document/pdf_render_helper.cc (see there why not mineru-cpp).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "../util/pdf_writer.h"
#include "../util/sanitizers.h"
#include "pdf/pdf.h"

namespace mineru {
namespace {

using testing::MakePdf;
using testing::PdfPage;
using Clock = std::chrono::steady_clock;

PdfLimits HelperLimits(double timeout_s, const std::string& mode = "") {
  PdfLimits limits;
  limits.render_timeout_s = timeout_s;
  limits.render_helper = {MINERU_PDF_RENDER_HELPER};
  if (!mode.empty()) limits.render_helper.push_back(mode);
  return limits;
}

// A PDF whose objects are `objects` (object i + 1), the first the catalog.
std::string PdfOfObjects(const std::vector<std::string>& objects) {
  std::string out = "%PDF-1.4\n";
  std::vector<size_t> offsets;
  for (size_t i = 0; i < objects.size(); ++i) {
    offsets.push_back(out.size());
    out += std::to_string(i + 1) + " 0 obj\n" + objects[i] + "\nendobj\n";
  }
  const size_t xref = out.size();
  out += "xref\n0 " + std::to_string(objects.size() + 1) + "\n0000000000 65535 f \n";
  for (size_t off : offsets) {
    char line[32];
    std::snprintf(line, sizeof(line), "%010zu 00000 n \n", off);
    out += line;
  }
  out += "trailer\n<< /Size " + std::to_string(objects.size() + 1) + " /Root 1 0 R >>\nstartxref\n" +
         std::to_string(xref) + "\n%%EOF\n";
  return out;
}

// The hostile page of issue 35: Form XObjects nested 12 deep, each drawing the next 10 times, the
// last a stroke across the page: 10^12 strokes, from about 2 KB of file.
std::string NestedFormsPdf() {
  constexpr int kDepth = 12, kFanOut = 10;
  auto stream = [](const std::string& dict, const std::string& content) {
    return "<< " + dict + " /Length " + std::to_string(content.size()) + " >>\nstream\n" + content +
           "\nendstream";
  };
  std::vector<std::string> objs = {
      "<< /Type /Catalog /Pages 2 0 R >>",
      "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
      "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /F1 5 0 R >> >> "
      "/Contents 4 0 R >>",
      stream("", "/F1 Do"),
  };
  for (int k = 1; k <= kDepth; ++k) {  // form k is object 4 + k
    std::string dict = "/Type /XObject /Subtype /Form /BBox [0 0 612 792]";
    std::string content;
    if (k < kDepth) {
      const std::string next = "/F" + std::to_string(k + 1);
      dict += " /Resources << /XObject << " + next + " " + std::to_string(5 + k) + " 0 R >> >>";
      for (int i = 0; i < kFanOut; ++i) content += "q " + next + " Do Q ";
    } else {
      content = "0.5 w 10 10 m 600 780 l S";
    }
    objs.push_back(stream(dict, content));
  }
  return PdfOfObjects(objs);
}

std::string OrdinaryPdf() {
  PdfPage p;
  p.rects.push_back({72, 72, 144, 72, 0.0});
  p.texts.push_back({72, 300, 12, "An ordinary page"});
  return MakePdf({p});
}

// CPU time of this process (every thread) and of its reaped children, in seconds.
double CpuSeconds() {
  auto secs = [](const rusage& u) {
    return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
  };
  rusage self{}, children{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  return secs(self) + secs(children);
}

// True when this process has no child at all (running or a zombie).
bool NoChildren() { return ::waitpid(-1, nullptr, WNOHANG) == -1 && errno == ECHILD; }

// Issue 35, item 10: two hostile renders past a 0.5 s deadline are stopped, not abandoned: no
// child is left, nothing burns CPU, and an ordinary page renders right after (with abandoned
// threads, it was refused: "2 earlier renders that passed their deadline are still running").
TEST(PdfRenderChildTest, HostileRendersAreStoppedAtTheDeadlineAndLeaveNothingRunning) {
  const std::string hostile = NestedFormsPdf();
  EXPECT_LT(hostile.size(), 4096u);
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto doc = PdfDocument::OpenFromMemory(hostile, HelperLimits(0.5));
    ASSERT_TRUE(doc.ok()) << doc.status().ToString();
    const auto start = Clock::now();
    auto page = (*doc)->RenderPage(0);
    const double took = std::chrono::duration<double>(Clock::now() - start).count();
    ASSERT_FALSE(page.ok());
    EXPECT_EQ(page.status().code(), StatusCode::kDeadlineExceeded) << page.status().ToString();
    EXPECT_NE(page.status().message().find("took longer than 0.5 s"), std::string::npos)
        << page.status().ToString();
    EXPECT_LT(took, 3.0 * kSanitizerWaitFactor);
  }
  EXPECT_TRUE(NoChildren());
  // Idle for a second: the CPU this process (and any child it reaped) spends meanwhile. A render
  // left running would spend about all of it.
  const double cpu_before = CpuSeconds();
  const auto window_start = Clock::now();
  std::this_thread::sleep_until(window_start + std::chrono::seconds(1));  // the window measured
  const double cpu_spent = CpuSeconds() - cpu_before;
  EXPECT_LT(cpu_spent, 0.2) << "seconds of CPU spent in a second of idling";
  EXPECT_EQ(AbandonedRenders(), 0);
  // Another client's ordinary page, with the same limits, right after.
  auto doc = PdfDocument::OpenFromMemory(OrdinaryPdf(), HelperLimits(0.5 * kSanitizerWaitFactor * 10));
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  auto page = (*doc)->RenderPage(0);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_EQ(page->image.width, 1700);
  EXPECT_TRUE(NoChildren());
}

// The child's pixels are the in-process render's, byte for byte (the pipeline's outputs are
// compared byte for byte), at 200 DPI and at a scale that is not a round number (the long side
// capped), and the half-resolution retry of a render over its budget runs the same way.
TEST(PdfRenderChildTest, ChildRenderIsByteIdenticalToTheInProcessRender) {
  PdfPage p;
  p.rects.push_back({72, 72, 144, 72, 0.0});
  p.rects.push_back({300, 400, 100, 33.3, 0.5});
  p.texts.push_back({72, 300, 12, "Hello PDF world"});
  p.texts.push_back({80.5, 500.25, 9.5, "antialiased (text) at odd positions"});
  const std::string bytes = MakePdf({p});
  struct Case {
    double dpi;
    int max_side;
    size_t budget;
  };
  for (const Case& c : {Case{200, 3500, 0}, Case{200, 997, 0}, Case{200, 3500, 10u << 20}}) {
    PdfLimits in_process;
    in_process.max_render_bytes = c.budget;
    PdfLimits child = HelperLimits(60 * kSanitizerWaitFactor);
    child.max_render_bytes = c.budget;
    auto a_doc = PdfDocument::OpenFromMemory(bytes, in_process);
    auto b_doc = PdfDocument::OpenFromMemory(bytes, child);
    ASSERT_TRUE(a_doc.ok() && b_doc.ok());
    auto a = (*a_doc)->RenderPage(0, c.dpi, c.max_side);
    auto b = (*b_doc)->RenderPage(0, c.dpi, c.max_side);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    EXPECT_EQ(a->image.width, b->image.width);
    EXPECT_EQ(a->image.height, b->image.height);
    EXPECT_EQ(a->scale, b->scale);
    EXPECT_EQ(a->width_pt, b->width_pt);
    EXPECT_TRUE(a->image.pixels == b->image.pixels) << "pixels differ at max_side " << c.max_side;
  }
  EXPECT_TRUE(NoChildren());
}

// A helper that crashes, answers garbage, promises more pixels than the page can have, or writes
// past its answer's end: each is DataLoss for that page, reaped, and the next render works. The
// helper's own error comes back as it said it; a helper that cannot be started is Unavailable.
TEST(PdfRenderChildTest, MisbehavingHelperIsACleanErrorForThatPage) {
  const std::string bytes = OrdinaryPdf();
  struct Case {
    const char* mode;
    const char* says;
  };
  for (const Case& c : {Case{"--abort", "killed by signal 6"}, Case{"--garbage", "does not start like one"},
                        Case{"--too-large", "outside what was asked"}, Case{"--trailing", "past its end"}}) {
    auto doc = PdfDocument::OpenFromMemory(bytes, HelperLimits(30 * kSanitizerWaitFactor, c.mode));
    ASSERT_TRUE(doc.ok());
    auto page = (*doc)->RenderPage(0);
    ASSERT_FALSE(page.ok()) << c.mode;
    EXPECT_EQ(page.status().code(), StatusCode::kDataLoss) << page.status().ToString();
    EXPECT_NE(page.status().message().find(c.says), std::string::npos) << page.status().ToString();
    EXPECT_NE(page.status().message().find("rendering page 1"), std::string::npos)
        << page.status().ToString();
    EXPECT_TRUE(NoChildren()) << c.mode;
  }
  // The helper's own verdict on a request it cannot do (a page the PDF lacks) comes back as is.
  auto doc = PdfDocument::OpenFromMemory(bytes, HelperLimits(30 * kSanitizerWaitFactor, "--next-page"));
  ASSERT_TRUE(doc.ok());
  auto page = (*doc)->RenderPage(0);
  EXPECT_EQ(page.status().code(), StatusCode::kDataLoss) << page.status().ToString();
  EXPECT_EQ(page.status().message(), "cannot read page 2") << page.status().ToString();
  PdfLimits missing = HelperLimits(30);
  missing.render_helper = {"/nonexistent/render-helper"};
  doc = PdfDocument::OpenFromMemory(bytes, missing);
  ASSERT_TRUE(doc.ok());
  page = (*doc)->RenderPage(0);
  EXPECT_EQ(page.status().code(), StatusCode::kUnavailable) << page.status().ToString();
  doc = PdfDocument::OpenFromMemory(bytes, HelperLimits(30 * kSanitizerWaitFactor));
  ASSERT_TRUE(doc.ok());
  EXPECT_TRUE((*doc)->RenderPage(0).ok());
}

// Helpers started on several threads at once, one of them hostile: each child's pipe reaches no
// other child (one that held another's write end would hide that child's exit until it ended),
// so the ordinary pages come back at once and the hostile one at its deadline.
TEST(PdfRenderChildTest, ConcurrentRendersDoNotWaitOnEachOther) {
  const std::string ordinary = OrdinaryPdf(), hostile = NestedFormsPdf();
  constexpr int kThreads = 4;
  std::vector<StatusOr<RenderedPage>> pages(kThreads, InternalError("not run"));
  std::vector<double> took(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const bool bad = t == 0;
      auto doc = PdfDocument::OpenFromMemory(bad ? hostile : ordinary,
                                             HelperLimits(bad ? 1.0 : 30.0 * kSanitizerWaitFactor));
      if (!doc.ok()) {
        pages[t] = doc.status();
        return;
      }
      const auto start = Clock::now();
      pages[t] = (*doc)->RenderPage(0);
      took[t] = std::chrono::duration<double>(Clock::now() - start).count();
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(pages[0].status().code(), StatusCode::kDeadlineExceeded) << pages[0].status().ToString();
  for (int t = 1; t < kThreads; ++t) {
    ASSERT_TRUE(pages[t].ok()) << pages[t].status().ToString();
    EXPECT_EQ(pages[t]->image.width, 1700);
    EXPECT_LT(took[t], 10.0 * kSanitizerWaitFactor);
  }
  EXPECT_TRUE(NoChildren());
}

}  // namespace
}  // namespace mineru
