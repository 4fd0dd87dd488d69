// pipeline/write/mineru_3_4/finalize.cc — MinerU 3.4.4 finalize_middle_json for the VLM backend
// (backend/utils/para_block_utils.py: build_para_blocks_from_preproc, merge_para_text_blocks) and
// replace_inline_table_images (backend/utils/html_image_utils.py).
// The cross-page table merge (utils/table_merge.py) is in table_merge.cc.
#include <string_view>

#include "base/hash.h"
#include "base/utf8.h"
#include "pipeline/common/py_text.h"
#include "pipeline/write/mineru_3_4/assemble.h"

namespace mineru::pipeline {

namespace v34 {
void MergeTablesV34(Json& pdf_info);  // table_merge.cc
}

namespace {

struct Ordered {
  int page;
  Json* block;
};

std::string TypeOf(const Json& b) { return b.value("type", std::string()); }

bool HasLines(const Json& b) {  // _block_has_lines
  const auto it = b.find("lines");
  if (it == b.end()) return false;
  for (const auto& line : *it) {
    const auto s = line.find("spans");
    if (s != line.end() && !s->empty()) return true;
  }
  return false;
}

bool IsCrossPageLine(const Json& line) {
  const Json& spans = line["spans"];
  if (spans.empty()) return false;
  for (const auto& s : spans) {
    if (!s.value("cross_page", false)) return false;
  }
  return true;
}

std::vector<const Json*> MetricLines(const Json& b) {  // _resolve_local_metric_lines
  std::vector<const Json*> all, local;
  for (const auto& line : b["lines"]) {
    all.push_back(&line);
    if (!IsCrossPageLine(line)) local.push_back(&line);
  }
  return local.empty() ? all : local;
}

std::string SpanContent(const Json& s) {
  const auto c = s.find("content");
  return (c != s.end() && c->is_string()) ? c->get<std::string>() : std::string();
}

std::string FirstContent(const Json& lines) {
  for (const auto& line : lines) {
    for (const auto& s : line["spans"]) {
      std::string c = SpanContent(s);
      if (!c.empty()) return c;
    }
  }
  return "";
}

std::string LastContent(const Json& lines) {
  for (auto l = lines.rbegin(); l != lines.rend(); ++l) {
    const Json& spans = (*l)["spans"];
    for (auto s = spans.rbegin(); s != spans.rend(); ++s) {
      std::string c = SpanContent(*s);
      if (!c.empty()) return c;
    }
  }
  return "";
}

double Coord(const Json& line, int k) { return line["bbox"][k].get<double>(); }

bool StartsDigitOrUpper(const std::string& s) {
  int len = 1;
  const uint32_t cp = utf8::DecodeAt(s, 0, &len);
  if (cp < 0x80) return std::isdigit(static_cast<int>(cp)) || std::isupper(static_cast<int>(cp));
  // Unicode digits/uppercase beyond ASCII: full-width digits and Latin-1/Greek/Cyrillic capitals.
  if (cp >= 0xFF10 && cp <= 0xFF19) return true;
  if (cp >= 0xFF21 && cp <= 0xFF3A) return true;
  if ((cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) || (cp >= 0x391 && cp <= 0x3A9) ||
      (cp >= 0x410 && cp <= 0x42F))
    return true;
  return false;
}

bool EndsWithStopFlag(const std::string& s) {
  for (const char* f : {".", "!", "?", "。", "！", "？", ")", "）", "\"", "”", ":", "：", ";", "；"}) {
    if (py::EndsWith(s, f)) return true;
  }
  return false;
}

// can_auto_merge_text_blocks(cur, prev, allow_single_line_blocks=True)
bool CanMerge(const Json& cur, const Json& prev) {
  if (cur["lines"].empty() || prev["lines"].empty()) return false;
  const auto cm = MetricLines(cur), pm = MetricLines(prev);
  const Json& f = *cm.front();
  const Json& l = *pm.back();
  const double fh = Coord(f, 3) - Coord(f, 1), lh = Coord(l, 3) - Coord(l, 1);
  if (fh <= 0 || lh <= 0) return false;
  auto fs = [](const std::vector<const Json*>& lines) {
    double x0 = 1e300, x1 = -1e300;
    for (const Json* line : lines) {
      x0 = std::min(x0, Coord(*line, 0));
      x1 = std::max(x1, Coord(*line, 2));
    }
    return std::make_pair(x0, x1);
  };
  const auto cfs = fs(cm), pfs = fs(pm);
  if (std::abs(cfs.first - Coord(f, 0)) >= fh / 2) return false;
  if (std::abs(pfs.second - Coord(l, 2)) >= lh) return false;
  const std::string first = FirstContent(cur["lines"]), last = LastContent(prev["lines"]);
  if (first.empty() || last.empty() || EndsWithStopFlag(last) || StartsDigitOrUpper(first)) return false;
  const double wc = cfs.second - cfs.first, wp = pfs.second - pfs.first;
  const double mn = std::min(wc, wp);
  if (mn <= 0 || std::abs(wc - wp) >= mn) return false;
  return cur["bbox"][1].get<double>() < prev["bbox"][3].get<double>();
}

Json* PreviousMergeText(std::vector<Ordered>& ordered, size_t cur) {
  for (size_t i = cur; i-- > 0;) {
    if (ordered[i].page != ordered[cur].page) return nullptr;
    const std::string t = TypeOf(*ordered[i].block);
    if (t == "title" || t == "doc_title" || t == "paragraph_title" || t == "interline_equation" ||
        t == "list") {
      return nullptr;
    }
    if (t != "text") {
      if (t == "image" || t == "table" || t == "chart" || t == "code") continue;
      return nullptr;
    }
    return ordered[i].block;
  }
  return nullptr;
}

void MarkCrossPage(Json& block) {  // iter_block_spans
  if (block.contains("lines")) {
    for (auto& line : block["lines"]) {
      for (auto& s : line["spans"]) s["cross_page"] = true;
    }
  }
  if (block.contains("blocks")) {
    for (auto& b : block["blocks"]) MarkCrossPage(b);
  }
}

bool IsRefList(const Json& b) {
  return TypeOf(b) == "list" && b.value("sub_type", std::string()) == "ref_text";
}

void MergeParaTextBlocks(Json& pdf_info) {
  std::vector<Ordered> ordered;
  for (auto& page : pdf_info) {
    for (auto& b : page["para_blocks"]) ordered.push_back({page.value("page_idx", 0), &b});
  }
  for (size_t cur = ordered.size(); cur-- > 0;) {
    Json& block = *ordered[cur].block;
    const std::string t = TypeOf(block);
    if (t == "text") {
      if (!HasLines(block) || !block.value("merge_prev", false)) continue;
      Json* prev = PreviousMergeText(ordered, cur);
      if (!prev || !CanMerge(block, *prev)) continue;
      for (auto& line : block["lines"]) (*prev)["lines"].push_back(line);
      block["lines"] = Json::array();
      block["lines_deleted"] = true;
    } else if (t == "list") {
      if (!block.contains("blocks") || block["blocks"].empty() || cur == 0) continue;
      Json& prev = *ordered[cur - 1].block;
      if (TypeOf(prev) != "list" || !IsRefList(block) || !IsRefList(prev)) continue;
      if (ordered[cur - 1].page != ordered[cur].page) MarkCrossPage(block);
      for (auto& b : block["blocks"]) prev["blocks"].push_back(b);
      block["blocks"] = Json::array();
      block["lines_deleted"] = true;
    }
  }
}

// base64.b64decode (non-alphabet characters are discarded, as with validate=False).
bool Base64Decode(std::string_view in, std::string* out) {
  uint32_t acc = 0;
  int bits = 0, n = 0;
  for (char ch : in) {
    int v;
    if (ch >= 'A' && ch <= 'Z')
      v = ch - 'A';
    else if (ch >= 'a' && ch <= 'z')
      v = ch - 'a' + 26;
    else if (ch >= '0' && ch <= '9')
      v = ch - '0' + 52;
    else if (ch == '+')
      v = 62;
    else if (ch == '/')
      v = 63;
    else
      continue;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    ++n;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return n % 4 != 1;
}

}  // namespace

// save_base64_image for every src="data:image/..." in html: the bytes go to
// images/{sha256(data uri)}.{ext} and src becomes that file name. Undecodable ones are kept.
std::string ReplaceInlineTableImages(const std::string& html, const InlineImageWriteFn& write) {
  if (html.empty() || !write || html.find("base64,") == std::string::npos) return html;
  static constexpr std::string_view kOpen = "src=\"data:image/";
  std::string out;
  size_t i = 0;
  while (true) {
    const size_t at = html.find(kOpen, i);
    const size_t end = at == std::string::npos ? at : html.find('"', at + kOpen.size());
    if (at == std::string::npos || end == std::string::npos || end == at + kOpen.size()) break;
    const std::string uri = html.substr(at + 5, end - at - 5);
    const size_t semi = uri.find(';');
    const size_t comma = uri.find(";base64,");
    std::string bytes;
    out.append(html, i, at - i);
    if (semi != std::string::npos && semi > 11 && comma == semi && comma + 8 < uri.size() &&
        Base64Decode(std::string_view(uri).substr(comma + 8), &bytes)) {
      std::string fmt = uri.substr(11, semi - 11);
      for (char& c : fmt) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      fmt = fmt.substr(0, fmt.find('+'));
      if (fmt == "jpeg") fmt = "jpg";
      const std::string name = Sha256Hex(uri) + "." + fmt;
      write(name, bytes);
      out += "src=\"" + name + "\"";
    } else {
      out.append(html, at, end + 1 - at);
    }
    i = end + 1;
  }
  out.append(html, i, std::string::npos);
  return out;
}

Json FinalizeMiddleV34(Json pdf_info, bool table_merge) {
  for (auto& page : pdf_info) page["para_blocks"] = page["preproc_blocks"];
  MergeParaTextBlocks(pdf_info);
  if (table_merge) v34::MergeTablesV34(pdf_info);
  return pdf_info;
}

}  // namespace mineru::pipeline
