#include "pipeline/pdf_text.h"

#include <algorithm>
#include <cmath>

#include "base/utf8.h"

namespace mineru::pipeline {
namespace {

// First and last code points of valid UTF-8 text (PdfTextBox text is valid UTF-8); 0 if empty.
uint32_t FirstCodePoint(const std::string& s) {
  int len = 0;
  return s.empty() ? 0 : utf8::DecodeAt(s, 0, &len);
}
uint32_t LastCodePoint(const std::string& s) {
  int len = 0;
  return s.empty() ? 0 : utf8::DecodeBefore(s, s.size(), &len);
}
bool IsCjk(uint32_t cp) {
  return (cp >= 0x3000 && cp <= 0x9fff) || (cp >= 0xac00 && cp <= 0xd7af) || (cp >= 0xf900 && cp <= 0xfaff) ||
         (cp >= 0xff00 && cp <= 0xffef);
}

}  // namespace

// 1.2 adds doc_title, paragraph_title and list_item (turned into text by its post-processing).
bool TextFromPdfAllowed(const std::string& type) {
  return type == "text" || type == "title" || type == "doc_title" || type == "paragraph_title" ||
         type == "list_item";
}

std::optional<std::string> TextInBlock(const std::vector<PdfTextBox>& words, const LayoutBlock& b,
                                       double width_pt, double height_pt) {
  const double bx0 = b.x1 * width_pt, by0 = b.y1 * height_pt, bx1 = b.x2 * width_pt, by1 = b.y2 * height_pt;
  std::vector<const PdfTextBox*> in;
  for (const PdfTextBox& w : words) {
    const double cx = (w.x0 + w.x1) / 2, cy = (w.y0 + w.y1) / 2;
    if (cx >= bx0 && cx <= bx1 && cy >= by0 && cy <= by1) in.push_back(&w);
  }
  if (in.empty()) return std::nullopt;
  std::sort(in.begin(), in.end(),
            [](const PdfTextBox* a, const PdfTextBox* c) { return (a->y0 + a->y1) < (c->y0 + c->y1); });
  // Group into lines: a word joins the current line when its vertical centre is within half a
  // line height of the line's first word.
  std::vector<std::vector<const PdfTextBox*>> lines;
  for (const PdfTextBox* w : in) {
    const double cy = (w->y0 + w->y1) / 2;
    if (!lines.empty()) {
      const PdfTextBox* f = lines.back().front();
      const double fcy = (f->y0 + f->y1) / 2, fh = std::max(1.0, f->y1 - f->y0);
      if (std::fabs(cy - fcy) <= fh / 2) {
        lines.back().push_back(w);
        continue;
      }
    }
    lines.push_back({w});
  }
  std::string out;
  for (auto& line : lines) {
    std::sort(line.begin(), line.end(),
              [](const PdfTextBox* a, const PdfTextBox* c) { return a->x0 < c->x0; });
    for (size_t k = 0; k < line.size(); ++k) {
      const PdfTextBox* w = line[k];
      if (!out.empty()) {
        const uint32_t prev = LastCodePoint(out), next = FirstCodePoint(w->text);
        const bool line_start = k == 0;
        if (line_start && prev == '-') {
          out.pop_back();  // de-hyphenate across lines
        } else if (!(IsCjk(prev) && IsCjk(next))) {
          out += ' ';
        }
      }
      out += w->text;
    }
  }
  return out;
}

bool PageTextLayerUsable(const std::vector<PdfTextBox>& words, const std::vector<LayoutBlock>& blocks,
                         double width_pt, double height_pt) {
  size_t chars = 0, bad = 0;
  for (const PdfTextBox& w : words) {
    for (size_t i = 0; i < w.text.size();) {
      int len = 1;
      const uint32_t cp = utf8::DecodeAt(w.text, i, &len);
      i += static_cast<size_t>(len);
      ++chars;
      if (cp == 0xfffd || (cp >= 0xe000 && cp <= 0xf8ff) || cp < 0x20) ++bad;
    }
  }
  if (chars < 20 || bad * 10 > chars) return false;
  int text_blocks = 0, covered = 0;
  for (const LayoutBlock& b : blocks) {
    if (!TextFromPdfAllowed(b.type)) continue;
    ++text_blocks;
    if (TextInBlock(words, b, width_pt, height_pt)) ++covered;
  }
  return text_blocks > 0 && covered * 10 >= text_blocks * 8;
}

}  // namespace mineru::pipeline
