// pipeline/write/mineru_3_4/visual.cc — MinerU 3.4.4 visual grouping (utils/visual_magic_model_utils.py and
// utils/table_continuation.py). Blocks are MagicModel JSON objects {"bbox": [ints], "type", ...,
// "index"}; the functions follow the Python ones of the same names.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "base/utf8.h"
#include "pipeline/common/box_relations.h"
#include "pipeline/common/py_text.h"
#include "pipeline/write/mineru_3_4/visual.h"

namespace mineru::pipeline::v34 {

namespace {

std::string TypeOf(const Json& b) { return b.value("type", std::string()); }
int IndexOf(const Json& b) { return b.value("index", 0); }
IBox BoxOf(const Json& b) {
  const Json& j = b["bbox"];
  return {j[0].get<int>(), j[1].get<int>(), j[2].get<int>(), j[3].get<int>()};
}
int Height(const IBox& b) { return std::max(b[3] - b[1], 1); }

bool IsIgnored(const std::string& t) {  // VISUAL_RELATION_IGNORED_TYPES
  return t == "header" || t == "footer" || t == "page_number" || t == "page_footnote" || t == "aside_text";
}
bool IsFragmentType(const std::string& t) { return t == "text" || t == "footnote"; }
bool IsMainType(const std::string& t) {
  return t == "image_body" || t == kImageBlockBody || t == "table_body" || t == "chart_body" ||
         t == "code_body";
}

void MakeCaption(Json& b) {
  b["type"] = "caption";
  if (b.contains("merge_prev")) {
    Json out = Json::object();
    for (auto it = b.begin(); it != b.end(); ++it) {
      if (it.key() != "merge_prev") out[it.key()] = it.value();
    }
    b = std::move(out);
  }
}

bool IsHorizontallyNearTable(const IBox& b, const IBox& t) {
  const double tol = std::max(12.0, std::max(t[2] - t[0], 1) * 0.03);
  return !(b[2] < t[0] - tol || b[0] > t[2] + tol);
}
double StackedMaxGap(int h) { return std::max(12.0, h * 1.5); }

bool IsInlineCaptionFragment(const IBox& c, const IBox& t, const IBox& v) {
  const int ch = Height(c), th = Height(t);
  const int min_h = std::max(std::min(ch, th), 1);
  const double overlap = std::min(c[3], t[3]) - std::max(c[1], t[1]);
  const double dcy = std::fabs((c[1] + c[3]) / 2.0 - (t[1] + t[3]) / 2.0);
  const bool same_line = overlap / min_h >= 0.6 || dcy <= std::max(ch, th) * 0.5;
  if (!same_line) return false;
  const int gap = v[1] - std::max(c[3], t[3]);
  return 0 <= gap && gap <= std::max(12.0, std::max(ch, th) * 1.5);
}

// Positions (into blocks) of the blocks of the stacked caption cluster above the table.
std::vector<size_t> StackedCluster(const std::vector<Json>& blocks, size_t table) {
  const IBox t = BoxOf(blocks[table]);
  std::vector<size_t> cands;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const std::string ty = TypeOf(blocks[i]);
    if (i == table || !(ty == "caption" || ty == "text" || ty == "footnote")) continue;
    const IBox b = BoxOf(blocks[i]);
    if (b[3] <= t[1] && IsHorizontallyNearTable(b, t)) cands.push_back(i);
  }
  std::stable_sort(cands.begin(), cands.end(), [&](size_t a, size_t b) {  // (y0, index) descending
    const int ya = BoxOf(blocks[a])[1], yb = BoxOf(blocks[b])[1];
    if (ya != yb) return ya > yb;
    return IndexOf(blocks[a]) > IndexOf(blocks[b]);
  });
  std::vector<size_t> cluster;
  int next_top = t[1], max_h = 1;
  for (size_t i : cands) {
    const IBox b = BoxOf(blocks[i]);
    const int h = Height(b);
    const int gap = next_top - b[3];
    if (!(0 <= gap && gap <= StackedMaxGap(std::max(max_h, h)))) break;
    cluster.push_back(i);
    next_top = b[1];
    max_h = std::max(max_h, h);
  }
  std::reverse(cluster.begin(), cluster.end());
  return cluster;
}

void FallbackStackedTableCaptions(std::vector<Json>& blocks) {
  for (size_t t = 0; t < blocks.size(); ++t) {
    if (TypeOf(blocks[t]) != "table_body") continue;
    const std::vector<size_t> cluster = StackedCluster(blocks, t);
    std::optional<size_t> last;
    for (size_t k = 0; k < cluster.size(); ++k) {
      if (TypeOf(blocks[cluster[k]]) == "caption") last = k;
    }
    if (!last) continue;
    for (size_t k = *last + 1; k < cluster.size(); ++k) {
      if (IsFragmentType(TypeOf(blocks[cluster[k]]))) MakeCaption(blocks[cluster[k]]);  // single line: always
    }
  }
}

void FallbackInlineFragments(std::vector<Json>& blocks) {
  if (blocks.size() < 3) return;
  for (size_t pos = 0; pos < blocks.size(); ++pos) {
    if (!IsFragmentType(TypeOf(blocks[pos]))) continue;
    std::optional<size_t> prev, next;
    for (size_t i = pos; i-- > 0;) {
      if (!IsIgnored(TypeOf(blocks[i]))) {
        prev = i;
        break;
      }
    }
    for (size_t i = pos + 1; i < blocks.size(); ++i) {
      if (!IsIgnored(TypeOf(blocks[i]))) {
        next = i;
        break;
      }
    }
    if (!prev || !next || TypeOf(blocks[*prev]) != "caption" || !IsMainType(TypeOf(blocks[*next]))) continue;
    if (!IsInlineCaptionFragment(BoxOf(blocks[*prev]), BoxOf(blocks[pos]), BoxOf(blocks[*next]))) continue;
    MakeCaption(blocks[pos]);
  }
}

std::string BlockText(const Json& b) {  // _block_text_content
  std::string s;
  const auto lines = b.find("lines");
  if (lines == b.end()) return s;
  for (const auto& line : *lines) {
    for (const auto& span : line["spans"]) {
      const auto c = span.find("content");
      if (c != span.end() && c->is_string()) s += c->get<std::string>();
    }
  }
  return s;
}

void FallbackLeadingContinuation(std::vector<Json>& blocks) {
  std::vector<size_t> eff;
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (!IsIgnored(TypeOf(blocks[i]))) eff.push_back(i);
  }
  if (eff.size() < 2) return;
  size_t cursor = 0;
  while (cursor < eff.size() && IsFragmentType(TypeOf(blocks[eff[cursor]])) &&
         IsTableContinuationText(BlockText(blocks[eff[cursor]]))) {
    ++cursor;
  }
  if (cursor == 0 || cursor >= eff.size()) return;
  const Json& table = blocks[eff[cursor]];
  if (TypeOf(table) != "table_body") return;
  const IBox t = BoxOf(table);
  int next_top = t[1], max_h = 1;
  for (size_t k = cursor; k-- > 0;) {
    const IBox b = BoxOf(blocks[eff[k]]);
    if (!IsHorizontallyNearTable(b, t)) return;
    const int h = Height(b);
    const int gap = next_top - b[3];
    if (gap > StackedMaxGap(std::max(max_h, h)) || gap < -std::max(2.0, h * 0.3)) return;
    next_top = b[1];
    max_h = std::max(max_h, h);
  }
  for (size_t k = 0; k < cursor; ++k) MakeCaption(blocks[eff[k]]);
}

}  // namespace

IBox BoxOfJson(const Json& b) { return BoxOf(b); }

bool IsTableContinuationText(const std::string& text) {
  // full_to_half (FF01-FF5E) then lower(); non-ASCII letters are not lower-cased (the markers are
  // ASCII or CJK, so only ASCII case matters).
  std::string t;
  const std::string_view s = py::Strip(text);
  for (size_t i = 0; i < s.size();) {
    int len = 1;
    uint32_t cp = utf8::DecodeAt(s, i, &len);
    if (cp >= 0xFF01 && cp <= 0xFF5E) cp -= 0xFEE0;
    if (cp >= 'A' && cp <= 'Z') cp += 32;
    utf8::AppendCodepoint(cp, &t);
    i += static_cast<size_t>(len);
  }
  if (t.empty()) return false;
  static const char* const kEnd[] = {"(续)",     "(续表)",       "(续上表)",  "(continued)", "(cont.)",
                                     "(cont’d)", "(…continued)", "continued", "续表"};
  for (const char* m : kEnd) {
    if (!py::EndsWith(t, m)) continue;
    if (std::string_view(m) != "continued") return true;
    const size_t start = t.size() - 9;
    if (start == 0) return true;
    int len = 1;
    const uint32_t prev = utf8::DecodeBefore(t, start, &len);
    // str.isalpha: ASCII letters, and (approximately) any non-ASCII character outside punctuation.
    const bool alpha = (prev < 0x80)
                           ? std::isalpha(static_cast<int>(prev)) != 0
                           : !(prev >= 0x2000 && prev <= 0x206F) && !(prev >= 0x3000 && prev <= 0x303F) &&
                                 !(prev >= 0xFF00 && prev <= 0xFF0F);
    if (!alpha) return true;
  }
  return t.find("(continued)") != std::string::npos;
}

void FallbackCaptions(std::vector<Json>& blocks) {
  FallbackInlineFragments(blocks);
  FallbackStackedTableCaptions(blocks);
  FallbackLeadingContinuation(blocks);
}

}  // namespace mineru::pipeline::v34
