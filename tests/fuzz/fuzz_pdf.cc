// libFuzzer target: PDF loading through poppler, page size, a low-resolution render and the text
// layer of the first page.
#include <string>

#include "pdf/pdf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mineru::PdfLimits limits;
  limits.max_pages = 50;
  auto doc =
      mineru::PdfDocument::OpenFromMemory(std::string(reinterpret_cast<const char*>(data), size), limits);
  if (!doc.ok()) return 0;
  (void)(*doc)->RenderPage(0, 10, 200);
  (void)(*doc)->PageText(0);
  return 0;
}
