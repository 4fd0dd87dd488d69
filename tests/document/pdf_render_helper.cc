// tests/document/pdf_render_helper.cc — the render helper of the PDF tests: what `mineru-cpp
// __render-page` does (pdf/pdf.h's RunRenderHelper), in a program of the pdf layer alone, plus
// switches that make it misbehave the ways a helper can, for the tests of the parent's side:
//   pdf_render_helper [--abort | --garbage | --too-large | --trailing | --next-page] PAGE SCALE CPU_SECONDS
//                     MEMORY_BYTES
// Why not mineru-cpp itself: the PDF unit tests would then build the whole program (every layer)
// and need the CLI; this helper runs the very same RunRenderHelper, and mineru-cpp's use of it is
// what the end-to-end tests (document_e2e_test: parse with page deadlines, outputs compared byte
// for byte) run.
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "pdf/pdf.h"
#include "pdf/render_child.h"

namespace {

void WriteRaw(const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t put = ::write(1, c, n);
    if (put <= 0) ::_exit(3);
    c += put;
    n -= static_cast<size_t>(put);
  }
}

// A well-formed answer header claiming a page of w x h pixels.
void WriteHeader(int32_t w, int32_t h) {
  mineru::pdf_internal::AnswerHeader head{};
  std::memcpy(head.magic, mineru::pdf_internal::kAnswerMagic, sizeof(head.magic));
  head.width = w;
  head.height = h;
  WriteRaw(&head, sizeof(head));
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc >= 2 && std::strncmp(argv[1], "--", 2) == 0 ? argv[1] : "";
  if (mode == "--abort") {  // a crash before any answer (poppler dying, say); no core file
    const rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    std::abort();
  }
  if (mode == "--garbage") {
    WriteRaw("%PDF-1.4 this is not an answer", 30);
    ::_exit(0);
  }
  if (mode == "--too-large") {
    WriteHeader(1 << 20, 1 << 20);  // 3 TB of pixels promised: refused before anything is allocated
    ::_exit(0);
  }
  if (mode == "--trailing") {
    WriteHeader(1, 1);
    const char one_pixel_then_more[] = {'\xff', '\xff', '\xff', 'e', 'x', 't', 'r', 'a'};
    WriteRaw(one_pixel_then_more, sizeof(one_pixel_then_more));  // bytes past the answer's end
    ::_exit(0);
  }
  const int skip = mode.empty() ? 1 : 2;
  // --next-page: a request for a page the PDF may not have, so the helper's own verdict (an
  // error) is what goes back.
  std::string next;
  if (mode == "--next-page" && argc > skip) {
    next = std::to_string(std::atoi(argv[skip]) + 1);
    argv[skip] = next.data();
  }
  mineru::RunRenderHelper(argc - skip, argv + skip);
}
