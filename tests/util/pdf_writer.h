// tests/util/pdf_writer.h — writes small, valid PDFs for tests: pages with Helvetica text lines
// and filled grey rectangles (y measured from the top of the page, in points).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace mineru::testing {

struct PdfText {
  double x, y, size;
  std::string text;  // ASCII; ( ) \ are escaped
};
struct PdfRect {
  double x, y, w, h, gray;  // gray 0 = black, 1 = white
};
struct PdfPage {
  double width = 612, height = 792;
  std::vector<PdfText> texts;
  std::vector<PdfRect> rects;
  // Long strokes across the page, repeated: a page that takes poppler seconds to render (about
  // milliseconds per stroke at 200 DPI) while the file stays small.
  int slow_strokes = 0;
};

inline std::string PdfEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '(' || c == ')' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}

inline std::string MakePdf(const std::vector<PdfPage>& pages) {
  std::vector<std::string> objs;  // object i+1
  const int n = static_cast<int>(pages.size());
  // 1: catalog, 2: pages, 3: font, then per page: page object and content stream.
  std::string kids;
  for (int i = 0; i < n; ++i) kids += std::to_string(4 + 2 * i) + " 0 R ";
  objs.push_back("<< /Type /Catalog /Pages 2 0 R >>");
  objs.push_back("<< /Type /Pages /Kids [" + kids + "] /Count " + std::to_string(n) + " >>");
  objs.push_back("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>");
  char buf[256];
  for (int i = 0; i < n; ++i) {
    const PdfPage& p = pages[i];
    std::string content;
    for (const PdfRect& r : p.rects) {
      std::snprintf(buf, sizeof(buf), "%.3f g %.2f %.2f %.2f %.2f re f\n", r.gray, r.x, p.height - r.y - r.h,
                    r.w, r.h);
      content += buf;
    }
    if (p.slow_strokes > 0) content += "0.5 w 1 0 0 RG\n";
    for (int k = 0; k < p.slow_strokes; ++k) content += "10 10 m 600 780 l 20 700 l 500 30 l S\n";
    for (const PdfText& t : p.texts) {
      std::snprintf(buf, sizeof(buf), "0 g BT /F1 %.2f Tf %.2f %.2f Td (", t.size, t.x,
                    p.height - t.y - t.size);
      content += buf + PdfEscape(t.text) + ") Tj ET\n";
    }
    std::snprintf(buf, sizeof(buf), "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %.2f %.2f] ", p.width,
                  p.height);
    objs.push_back(std::string(buf) + "/Resources << /Font << /F1 3 0 R >> >> /Contents " +
                   std::to_string(5 + 2 * i) + " 0 R >>");
    objs.push_back("<< /Length " + std::to_string(content.size()) + " >>\nstream\n" + content + "endstream");
  }
  std::string out = "%PDF-1.4\n%\xe2\xe3\xcf\xd3\n";
  std::vector<size_t> offsets;
  for (size_t i = 0; i < objs.size(); ++i) {
    offsets.push_back(out.size());
    out += std::to_string(i + 1) + " 0 obj\n" + objs[i] + "\nendobj\n";
  }
  const size_t xref = out.size();
  out += "xref\n0 " + std::to_string(objs.size() + 1) + "\n0000000000 65535 f \n";
  for (size_t off : offsets) {
    std::snprintf(buf, sizeof(buf), "%010zu 00000 n \n", off);
    out += buf;
  }
  out += "trailer\n<< /Size " + std::to_string(objs.size() + 1) + " /Root 1 0 R >>\nstartxref\n" +
         std::to_string(xref) + "\n%%EOF\n";
  return out;
}

// A page with a title (20 pt) and one line of body text under it.
inline PdfPage TextPage(const std::string& title) {
  PdfPage p;
  p.texts.push_back({72, 50, 20, title});
  p.texts.push_back({72, 120, 10, "Body text of the page."});
  return p;
}

}  // namespace mineru::testing
