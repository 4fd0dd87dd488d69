// pipeline/extract/vlu_1_2/cross_page_table.cc — 1.2.1's cross-page table requests and answers (see the
// header).
#include "pipeline/extract/vlu_1_2/cross_page_table.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <memory>
#include <set>

#include "pipeline/common/html_dom.h"
#include "pipeline/common/py_text.h"

namespace mineru::pipeline {
namespace {

constexpr int kMaxSpan = 1000;
constexpr int64_t kMaxGridCells = 1000000;
constexpr size_t kMaxHeaderRows = 5;  // MAX_HEADER_ROWS
constexpr int kWindowPages = 64;      // MINERU_PROCESSING_WINDOW_SIZE

// A cell as bs4 gives it to the helpers: get_text() and its span attributes as written.
struct HtmlCell {
  std::string text;
  std::optional<std::string> colspan, rowspan;
};
struct HtmlRow {
  std::vector<HtmlCell> cells;
};

struct Metrics {
  int row_idx = 0, effective_cols = 0, actual_cols = 0;
};

struct Signature {
  int effective_cols = 0;
  std::vector<std::pair<int, int>> spans;  // (colspan, rowspan) per cell
  std::vector<std::string> normalized;
  bool operator==(const Signature& o) const {
    return effective_cols == o.effective_cols && spans == o.spans && normalized == o.normalized;
  }
};

struct Segment {
  std::string text;
  int start = 0, end = 0;
};

// TableMergeState as far as the detection uses it.
struct Table {
  std::vector<HtmlRow> rows;
  std::vector<std::vector<std::pair<int, int>>> spans;  // (colspan, rowspan) per cell
  int total_cols = 0;
  std::optional<Metrics> last_data_row;  // last row with cells
  std::vector<Metrics> front;            // rows [0, min(n, 6))
  std::vector<Signature> front_sigs;     // rows [0, min(n, 5))
};

// full_to_half: U+FF01..U+FF5E to ASCII, everything else unchanged.
std::string FullToHalf(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto b1 = i + 2 < s.size() ? static_cast<unsigned char>(s[i + 1]) : 0;
    const auto b2 = i + 2 < s.size() ? static_cast<unsigned char>(s[i + 2]) : 0;
    if (static_cast<unsigned char>(s[i]) == 0xEF && b2 >= 0x80 && b2 <= 0xBF &&
        ((b1 == 0xBC && b2 >= 0x81) || (b1 == 0xBD && b2 <= 0x9E))) {
      out += static_cast<char>((b1 == 0xBC ? 0x20 : 0x60) + (b2 - 0x80));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string Normalized(const std::string& text) {  // "".join(full_to_half(t).split())
  const std::string half = FullToHalf(text);
  std::string out;
  for (size_t i = 0; i < half.size();) {
    const size_t n = py::SpaceLen(half, i);
    if (n > 0) {
      i += n;
    } else {
      out += half[i++];
    }
  }
  return out;
}

std::string Display(const std::string& text) { return FullToHalf(py::Strip(text)); }

std::optional<std::string> Attr(const html::Node& n, const char* key) {
  for (const auto& [k, v] : n.attrs) {
    if (k == key) return v;
  }
  return std::nullopt;
}

// soup.find_all("tr"), each row's find_all(["td", "th"]) (nested tables' rows and cells included).
std::vector<HtmlRow> TableRows(const std::string& markup) {
  const std::unique_ptr<html::Node> root = html::Parse(markup);
  std::vector<HtmlRow> rows;
  for (html::Node* tr : html::FindAll(root.get(), {"tr"})) {
    HtmlRow row;
    for (html::Node* cell : html::FindAll(tr, {"td", "th"})) {
      row.cells.push_back({html::GetText(cell), Attr(*cell, "colspan"), Attr(*cell, "rowspan")});
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::optional<int> Span(const std::optional<std::string>& attr) {
  if (!attr) return 1;
  const std::optional<int> v = PyIntAttribute(*attr);
  if (!v || *v > kMaxSpan || *v < -kMaxSpan) return std::nullopt;
  return v;
}

// _scan_rows over the first n rows: per-row metrics, total columns, the last row with cells.
struct Scan {
  std::vector<Metrics> metrics;
  int total_cols = 0;
  std::optional<Metrics> last_nonempty;
};
std::optional<Scan> ScanRows(const Table& t, size_t n) {
  std::map<int, std::set<int>> occupied;
  Scan s;
  int64_t cells = 0;
  for (size_t r = 0; r < n; ++r) {
    const int row = static_cast<int>(r);
    int col = 0, actual = 0;
    for (const auto& [colspan, rowspan] : t.spans[r]) {
      while (occupied[row].count(col)) ++col;
      actual += colspan;
      for (int ro = 0; ro < rowspan; ++ro) {
        std::set<int>& target = occupied[row + ro];
        for (int c = col; c < col + colspan; ++c) {
          target.insert(c);
          if (++cells > kMaxGridCells) return std::nullopt;
        }
      }
      col += colspan;
      s.total_cols = std::max(s.total_cols, col);
    }
    const std::set<int>& mine = occupied[row];
    const Metrics m{row, mine.empty() ? 0 : *mine.rbegin() + 1, actual};
    s.total_cols = std::max(s.total_cols, m.effective_cols);
    s.metrics.push_back(m);
    if (!t.spans[r].empty()) s.last_nonempty = m;
  }
  return s;
}

// _scan_row_visual_sources: which (row, cell) holds each column of row target; and total columns.
std::pair<std::map<int, std::pair<int, int>>, int> VisualSources(const Table& t, int target) {
  std::map<int, std::map<int, std::pair<int, int>>> occupied;
  int total = 0;
  for (int r = 0; r <= target; ++r) {
    int col = 0;
    for (int c = 0; c < static_cast<int>(t.spans[r].size()); ++c) {
      const auto [colspan, rowspan] = t.spans[r][c];
      while (occupied[r].count(col)) ++col;
      for (int ro = 0; ro < rowspan; ++ro) {
        for (int k = col; k < col + colspan; ++k) occupied[r + ro][k] = {r, c};
      }
      col += colspan;
      total = std::max(total, col);
    }
  }
  return {occupied[target], total};
}

// build_row_rendered_cell_segments: runs of columns held by one source cell.
std::vector<Segment> RenderedSegments(const Table& t, int target) {
  if (target < 0 || target >= static_cast<int>(t.rows.size())) return {};
  const auto [occupied, total] = VisualSources(t, target);
  std::vector<Segment> out;
  bool in_segment = false;
  std::pair<int, int> current{-1, -1};  // the source cell of the open segment
  for (int col = 0; col < total; ++col) {
    const auto it = occupied.find(col);
    if (it == occupied.end()) {
      if (in_segment) out.back().end = col;
      in_segment = false;
      continue;
    }
    if (in_segment && current == it->second) continue;
    if (in_segment) out.back().end = col;
    in_segment = true;
    current = it->second;
    const auto [r, c] = it->second;
    out.push_back({Display(t.rows[r].cells[c].text), col, total});
  }
  return out;
}

size_t RenderedSegmentCount(const Table& t, int target) { return RenderedSegments(t, target).size(); }

std::optional<Table> BuildTable(const std::optional<std::string>& html) {
  if (!html || html->empty()) return std::nullopt;
  Table t;
  t.rows = TableRows(*html);
  if (t.rows.empty()) return std::nullopt;
  for (const HtmlRow& row : t.rows) {
    std::vector<std::pair<int, int>> spans;
    for (const HtmlCell& cell : row.cells) {
      const auto colspan = Span(cell.colspan), rowspan = Span(cell.rowspan);
      if (!colspan || !rowspan) return std::nullopt;
      spans.emplace_back(*colspan, *rowspan);
    }
    t.spans.push_back(std::move(spans));
  }
  const auto scan = ScanRows(t, t.rows.size());
  if (!scan) return std::nullopt;
  t.total_cols = scan->total_cols;
  t.last_data_row = scan->last_nonempty;
  t.front.assign(scan->metrics.begin(),
                 scan->metrics.begin() + std::min<size_t>(t.rows.size(), kMaxHeaderRows + 1));
  for (size_t r = 0; r < std::min(t.rows.size(), kMaxHeaderRows); ++r) {
    Signature sig;
    sig.effective_cols = scan->metrics[r].effective_cols;
    sig.spans = t.spans[r];
    for (const HtmlCell& cell : t.rows[r].cells) sig.normalized.push_back(Normalized(cell.text));
    t.front_sigs.push_back(std::move(sig));
  }
  return t;
}

// detect_table_headers(prev, curr)[0]: leading rows equal in structure and text; else (visual
// fallback) equal in text and rendered segment count.
int HeaderRows(const Table& prev, const Table& curr) {
  const size_t n = std::min({prev.front_sigs.size(), curr.front_sigs.size(), kMaxHeaderRows});
  int rows = 0;
  while (static_cast<size_t>(rows) < n && prev.front_sigs[rows] == curr.front_sigs[rows]) ++rows;
  if (rows > 0) return rows;
  while (static_cast<size_t>(rows) < n &&
         prev.front_sigs[rows].normalized == curr.front_sigs[rows].normalized &&
         RenderedSegmentCount(prev, rows) == RenderedSegmentCount(curr, rows)) {
    ++rows;
  }
  return rows;
}

int ExpandHeaderRowsByRowspan(const Table& t, int header_rows) {
  if (header_rows <= 0 || t.rows.empty()) return header_rows;
  const int n = static_cast<int>(t.rows.size());
  int expanded = std::min(header_rows, n);
  for (int r = 0; r < expanded; ++r) {
    for (const auto& [colspan, rowspan] : t.spans[r]) {
      if (rowspan > 1) expanded = std::min(std::max(expanded, r + rowspan), n);
    }
  }
  return expanded;
}

const Metrics* FrontRow(const Table& t, int index) {
  return index >= 0 && index < static_cast<int>(t.front.size()) ? &t.front[index] : nullptr;
}

bool RowsMatch(const Table& prev, const Table& curr) {  // check_rows_match
  if (!prev.last_data_row) return false;
  const Metrics* first = FrontRow(curr, ExpandHeaderRowsByRowspan(curr, HeaderRows(prev, curr)));
  if (!first) return false;
  const Metrics& last = *prev.last_data_row;
  return last.effective_cols == first->effective_cols || last.actual_cols == first->actual_cols ||
         RenderedSegmentCount(prev, last.row_idx) == RenderedSegmentCount(curr, first->row_idx);
}

bool MergeableByStructure(const Table& prev, const Table& curr, const ContentBlock& pb,
                          const ContentBlock& cb) {
  const double w_curr = cb.bbox[2] - cb.bbox[0], w_prev = pb.bbox[2] - pb.bbox[0];
  if (w_curr > 0 && w_prev > 0 && std::abs(w_curr - w_prev) / std::min(w_curr, w_prev) >= 0.1) return false;
  if (prev.total_cols == curr.total_cols) return true;
  return RowsMatch(prev, curr);
}

bool SkippedBetweenTables(const std::string& type) {
  static const char* const kSkip[] = {"table_caption", "table_footnote", "image_caption", "image_footnote",
                                      "header",        "footer",         "page_number",   "page_footnote"};
  return std::find_if(std::begin(kSkip), std::end(kSkip), [&](const char* s) { return type == s; }) !=
         std::end(kSkip);
}

// The last (from_end) or first table of a page with only skipped types beyond it; -1 if none.
int EdgeTable(const std::vector<ContentBlock>& blocks, bool from_end) {
  const int n = static_cast<int>(blocks.size());
  for (int k = 0; k < n; ++k) {
    const int i = from_end ? n - 1 - k : k;
    if (blocks[i].type == "table") return i;
    if (!SkippedBetweenTables(blocks[i].type)) return -1;
  }
  return -1;
}

std::string Prompt(const std::vector<Segment>& last, const std::vector<Segment>& first) {
  auto texts = [](const std::vector<Segment>& segs) {
    std::vector<std::string> t;
    for (const Segment& s : segs) t.push_back(s.text);
    return py::ReprList(t);
  };
  return "Please merge the next two tables.\n\n## Table 1 (Previous Page - Last Table)\n\n"
         "**Caption:** (No caption)\n**Last Row(s) Data:**\n[" +
         texts(last) +
         "]\n\n---\n\n## Table 2 (Current Page - First Table)\n\n**Caption:** (No caption)\n"
         "**First Data Row(s):**\n[" +
         texts(first) + "]";
}

// _prepare_merge_tasks for one pair: the task, or nullopt when the pair is not asked about.
std::optional<CrossPageTask> TaskFor(const ContentBlock& pb, const ContentBlock& cb) {
  const auto prev = BuildTable(pb.content), curr = BuildTable(cb.content);
  if (!prev || !curr || !MergeableByStructure(*prev, *curr, pb, cb)) return std::nullopt;
  const Metrics* first = FrontRow(*curr, HeaderRows(*prev, *curr));  // not expanded by rowspan here
  if (!prev->last_data_row || !first) return std::nullopt;
  const std::vector<Segment> last_segs = RenderedSegments(*prev, prev->last_data_row->row_idx);
  const std::vector<Segment> first_segs = RenderedSegments(*curr, first->row_idx);
  if (last_segs.empty() || first_segs.empty() || last_segs.size() != first_segs.size()) return std::nullopt;
  CrossPageTask task;
  task.prompt = Prompt(last_segs, first_segs);
  task.segments = last_segs.size();
  for (const Segment& s : last_segs) {
    task.ranges.emplace_back(s.start, s.end);
    task.expanded_cols = std::max(task.expanded_cols, s.end);
  }
  return task;
}

}  // namespace

std::optional<int> PyIntAttribute(std::string_view v) {
  size_t i = 0, e = v.size();
  while (i < e && std::isspace(static_cast<unsigned char>(v[i]))) ++i;
  while (e > i && std::isspace(static_cast<unsigned char>(v[e - 1]))) --e;
  bool negative = false;
  if (i < e && (v[i] == '+' || v[i] == '-')) negative = v[i++] == '-';
  if (i >= e) return std::nullopt;
  long long value = 0;
  bool digit_before = false;
  for (; i < e; ++i) {
    const char c = v[i];
    if (c == '_' && digit_before && i + 1 < e && std::isdigit(static_cast<unsigned char>(v[i + 1]))) continue;
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    digit_before = true;
    value = value * 10 + (c - '0');
    if (value > 1000000) return std::nullopt;
  }
  return static_cast<int>(negative ? -value : value);
}

std::vector<CrossPageTask> CrossPageTableTasks(const std::vector<std::vector<ContentBlock>>& pages) {
  std::vector<CrossPageTask> tasks;
  for (size_t p = 1; p < pages.size(); ++p) {
    if (p % kWindowPages == 0) continue;  // the pages were asked about in different windows
    const auto& prev = pages[p - 1];
    const auto& curr = pages[p];
    if (prev.empty() || curr.empty()) continue;
    const int pi = EdgeTable(prev, /*from_end=*/true), ci = EdgeTable(curr, /*from_end=*/false);
    if (pi < 0 || ci < 0) continue;
    const ContentBlock& pb = prev[pi];
    const ContentBlock& cb = curr[ci];
    if (!pb.content || pb.content->empty() || !cb.content || cb.content->empty()) continue;
    std::optional<CrossPageTask> task = TaskFor(pb, cb);
    if (!task) continue;
    task->prev_page = static_cast<int>(p - 1);
    task->prev_block = pi;
    task->curr_page = static_cast<int>(p);
    task->curr_block = ci;
    tasks.push_back(std::move(*task));
  }
  return tasks;
}

MinerUSampling CrossPageSampling() {
  MinerUSampling s;  // temperature 0, top_p 0.01, top_k 1, no_repeat_ngram_size 100, no token cap
  s.presence_penalty = 1.0f;
  s.frequency_penalty = 0.05f;
  return s;
}

std::optional<std::vector<int>> ParseCellMergeAnswer(std::string_view a) {
  // re.search(r"\[[\s\d,]+\]"): at each '[', the longest run of whitespace/digits/commas must be
  // non-empty and end at ']' (the class holds no ']', so no shorter run can end there).
  for (size_t i = a.find('['); i != std::string_view::npos; i = a.find('[', i + 1)) {
    size_t j = i + 1;
    for (;;) {
      const size_t sp = py::SpaceLen(a, j);
      if (sp > 0) {
        j += sp;
      } else if (j < a.size() && ((a[j] >= '0' && a[j] <= '9') || a[j] == ',')) {
        ++j;
      } else {
        break;
      }
    }
    if (j == i + 1 || j >= a.size() || a[j] != ']') continue;
    // json.loads of the match: comma-separated integers (no leading zeros, JSON whitespace only),
    // each 0 or 1, at least one.
    std::vector<int> out;
    size_t k = i + 1;
    auto skip_ws = [&] {
      while (k < j && (a[k] == ' ' || a[k] == '\t' || a[k] == '\n' || a[k] == '\r')) ++k;
    };
    for (;;) {
      skip_ws();
      const size_t start = k;
      while (k < j && a[k] >= '0' && a[k] <= '9') ++k;
      const std::string_view num = a.substr(start, k - start);
      // Empty: not JSON. Two or more digits: a leading zero (not JSON) or a value over 1.
      if (num.size() != 1 || num[0] > '1') return std::nullopt;
      out.push_back(num[0] - '0');
      skip_ws();
      if (k == j) break;
      if (a[k] != ',') return std::nullopt;
      ++k;
    }
    return out;
  }
  return std::nullopt;
}

std::optional<std::vector<int>> CellMergeFromAnswer(const CrossPageTask& task, std::string_view answer) {
  const auto flags = ParseCellMergeAnswer(answer);
  if (!flags || flags->size() != task.segments) return std::nullopt;
  std::vector<int> out(static_cast<size_t>(task.expanded_cols), 0);
  for (size_t s = 0; s < flags->size(); ++s) {
    if ((*flags)[s] != 1) continue;
    for (int c = std::max(0, task.ranges[s].first); c < std::min(task.ranges[s].second, task.expanded_cols);
         ++c) {
      out[static_cast<size_t>(c)] = 1;
    }
  }
  return out;
}

}  // namespace mineru::pipeline
