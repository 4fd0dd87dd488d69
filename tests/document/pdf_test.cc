// Unit tests of the PDF layer: page sizes, rendering scale and colours, the text layer, errors.
#include <gtest/gtest.h>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "../util/pdf_writer.h"
#include "pdf/pdf.h"

namespace mineru {
namespace {

using testing::MakePdf;
using testing::PdfPage;

TEST(PdfTest, RendersAt200DpiWithCorrectColours) {
  PdfPage p;                                  // US letter
  p.rects.push_back({72, 72, 144, 72, 0.0});  // black box 1in from the top-left, 2in x 1in
  p.texts.push_back({72, 300, 12, "Hello PDF world"});
  auto doc = PdfDocument::OpenFromMemory(MakePdf({p}));
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  EXPECT_EQ((*doc)->num_pages(), 1);
  auto r = (*doc)->RenderPage(0);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->image.width, 1700);  // 8.5in * 200
  EXPECT_EQ(r->image.height, 2200);
  EXPECT_DOUBLE_EQ(r->width_pt, 612);
  auto px = [&](int x, int y) { return &r->image.pixels[(static_cast<size_t>(y) * r->image.width + x) * 3]; };
  const uint8_t* white = px(10, 10);
  EXPECT_EQ(white[0], 255);
  EXPECT_EQ(white[1], 255);
  EXPECT_EQ(white[2], 255);
  const uint8_t* black = px(400, 300);  // inside the box (1.5in, 1.25in from top-left... at 200 dpi)
  EXPECT_EQ(black[0], 0);
  EXPECT_EQ(black[2], 0);
  auto words = (*doc)->PageText(0);
  ASSERT_TRUE(words.ok());
  ASSERT_EQ(words->size(), 3u);
  EXPECT_EQ((*words)[0].text, "Hello");
  EXPECT_NEAR((*words)[0].x0, 72, 1);
  EXPECT_GT((*words)[0].y0, 290);  // top-left origin
  EXPECT_LT((*words)[0].y1, 320);
}

TEST(PdfTest, LongSideCappedAt3500) {
  PdfPage p;
  p.width = 2000;
  p.height = 4000;
  auto doc = PdfDocument::OpenFromMemory(MakePdf({p}));
  ASSERT_TRUE(doc.ok());
  auto r = (*doc)->RenderPage(0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->image.height, 3500);
  EXPECT_EQ(r->image.width, 1750);
}

TEST(PdfTest, Errors) {
  EXPECT_FALSE(PdfDocument::OpenFromMemory("").ok());
  EXPECT_FALSE(PdfDocument::OpenFromMemory("hello, not a pdf").ok());
  EXPECT_FALSE(PdfDocument::OpenFromMemory("%PDF-1.4\n" + std::string(100, 'x')).ok());
  EXPECT_FALSE(PdfDocument::Open("/nonexistent.pdf").ok());
  auto doc = PdfDocument::OpenFromMemory(MakePdf({PdfPage{}}));
  ASSERT_TRUE(doc.ok());
  EXPECT_FALSE((*doc)->RenderPage(1).ok());
  EXPECT_FALSE((*doc)->RenderPage(-1).ok());
}

TEST(PdfTest, OutOfMemoryRetriesOnceAtHalfTheDpi) {
  PdfPage p;  // US letter: 1700 x 2200 at 200 DPI (~26 MB to render), 850 x 1100 at 100 DPI (~7 MB)
  p.rects.push_back({72, 72, 144, 72, 0.0});
  const std::string pdf = MakePdf({p});
  PdfLimits limits;
  limits.max_render_bytes = 10u << 20;  // stands in for memory running out at 200 DPI
  auto doc = PdfDocument::OpenFromMemory(pdf, limits);
  ASSERT_TRUE(doc.ok());
  auto r = (*doc)->RenderPage(0);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->image.width, 850);
  EXPECT_EQ(r->image.height, 1100);
  EXPECT_DOUBLE_EQ(r->scale, 100.0 / 72);  // coordinates stay right: the page is still 612 x 792 pt
  EXPECT_DOUBLE_EQ(r->width_pt, 612);
  EXPECT_EQ(r->image.pixels[(static_cast<size_t>(150) * 850 + 200) * 3], 0);  // the box, at half scale

  limits.max_render_bytes = 2u << 20;  // not even at half the DPI
  doc = PdfDocument::OpenFromMemory(pdf, limits);
  ASSERT_TRUE(doc.ok());
  r = (*doc)->RenderPage(0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kOutOfMemory);
  EXPECT_NE(r.status().message().find("out of memory rendering page 1 at 200 DPI"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("at half the resolution too"), std::string::npos)
      << r.status().message();
}

}  // namespace
// Without a render helper (pdf_render_child_test has the child process): a page poppler renders
// for seconds fails at its deadline; the document goes on with a fresh parse (the next page renders
// at once, not behind the abandoned render's lock); at most kMaxAbandonedRenders run abandoned,
// further deadline renders are refused until they end.
TEST(PdfTest, RenderPastItsDeadlineIsAbandonedAndTheDocumentGoesOn) {
  PdfPage slow;
  // ~10 s of rendering against a deadline of 2 s, which the quick page (tens of ms) meets with a
  // wide margin even on a loaded machine.
  slow.slow_strokes = 1500;
  PdfPage quick;
  quick.rects.push_back({100, 100, 50, 50, 0.0});
  PdfLimits limits;
  limits.render_timeout_s = 2;
  auto doc = PdfDocument::OpenFromMemory(MakePdf({slow, quick, slow}), limits);
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  ASSERT_EQ(AbandonedRenders(), 0);
  auto first = (*doc)->RenderPage(0);
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.status().code(), StatusCode::kDeadlineExceeded) << first.status().ToString();
  EXPECT_NE(first.status().message().find("page 1"), std::string::npos) << first.status().ToString();
  auto second = (*doc)->RenderPage(1);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->image.width, 1700);
  auto third = (*doc)->RenderPage(2);
  EXPECT_EQ(third.status().code(), StatusCode::kDeadlineExceeded) << third.status().ToString();
  EXPECT_EQ(AbandonedRenders(), kMaxAbandonedRenders);
  auto refused = (*doc)->RenderPage(1);
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable) << refused.status().ToString();
  // The document may go before its abandoned renders end: they own what they use.
  doc = InvalidArgumentError("closed");
  // They end on their own (bounded wait, so a hung render fails the test instead of hanging it).
  for (int i = 0; i < 6000 && AbandonedRenders() > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(AbandonedRenders(), 0);
}

// Poppler builds process-wide colour profiles the first time any page is drawn, without a lock;
// the PDF layer builds them once before any document is parsed. Two documents drawn on two threads
// at once as this process's first poppler work: under ThreadSanitizer (scripts/tsan.sh) a race
// there fails the run; everywhere, both pages come out right.
TEST(PdfTest, FirstRendersOnTwoThreadsAtOnce) {
  PdfPage p;
  p.rects.push_back({72, 72, 144, 72, 0.0});
  p.texts.push_back({72, 300, 12, "Hello"});
  const std::string bytes = MakePdf({p});
  constexpr int kThreads = 4;
  std::atomic<int> ready{0};
  std::vector<StatusOr<RenderedPage>> pages(kThreads, InternalError("not run"));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto doc = PdfDocument::OpenFromMemory(bytes);
      if (!doc.ok()) {
        pages[t] = doc.status();
        ++ready;
        return;
      }
      // Start together: every thread has parsed its document before any draws.
      ++ready;
      while (ready.load() < kThreads) std::this_thread::yield();
      pages[t] = (*doc)->RenderPage(0, 72);
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& page : pages) {
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    EXPECT_EQ(page->image.width, 612);
    EXPECT_EQ(page->image.pixels[(static_cast<size_t>(110) * 612 + 100) * 3], 0);  // inside the box
  }
}

}  // namespace mineru
