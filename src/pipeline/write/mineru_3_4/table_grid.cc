// pipeline/write/mineru_3_4/table_grid.cc — see table_grid.h.
#include "pipeline/write/mineru_3_4/table_grid.h"

#include <algorithm>

#include "base/utf8.h"
#include "pipeline/common/py_text.h"

namespace mineru::pipeline::v34 {

namespace {

constexpr int kMaxHeaderRows = 5;

std::string NormalizedCellText(html::Node* c) {  // "".join(full_to_half(get_text()).split())
  const std::string t = FullToHalf(html::GetText(c));
  std::string out;
  for (size_t i = 0; i < t.size();) {
    const size_t n = py::SpaceLen(t, i);
    if (n) {
      i += n;
      continue;
    }
    out += t[i++];
  }
  return out;
}

using Sources = std::map<int, std::map<int, std::pair<int, int>>>;  // row -> col -> (src row, src cell)

std::pair<std::map<int, std::pair<int, int>>, int> VisualSources(const Rows& rows, int target,
                                                                 const Occupied& initial) {
  if (target < 0) target += static_cast<int>(rows.size());
  if (target < 0 || target >= static_cast<int>(rows.size())) return {{}, 0};
  Sources occ;
  int total = 0;
  for (const auto& [off, cols] : initial) {
    if (cols.empty()) continue;
    for (int c : cols) occ[off][c] = {-1, c};
    total = std::max(total, *cols.rbegin() + 1);
  }
  for (int r = 0; r <= target; ++r) {
    auto& row_occ = occ[r];
    int col = 0;
    const auto cells = Cells(rows[r]);
    for (size_t ci = 0; ci < cells.size(); ++ci) {
      while (row_occ.count(col)) ++col;
      const int cs = cells[ci]->IntAttr("colspan", 1), rs = cells[ci]->IntAttr("rowspan", 1);
      for (int ro = 0; ro < rs; ++ro) {
        for (int c = col; c < col + cs; ++c) occ[r + ro][c] = {r, static_cast<int>(ci)};
      }
      col += cs;
      total = std::max(total, col);
    }
  }
  return {occ[target], total};
}

RowSignature Signature(html::Node* row, int effective_cols) {
  RowSignature s;
  s.effective_cols = effective_cols;
  for (html::Node* c : Cells(row)) {
    s.colspans.push_back(c->IntAttr("colspan", 1));
    s.rowspans.push_back(c->IntAttr("rowspan", 1));
    s.normalized.push_back(NormalizedCellText(c));
  }
  return s;
}

void BuildFrontCache(TableState& s) {
  const size_t limit = std::min(s.rows.size(), static_cast<size_t>(kMaxHeaderRows + 1));
  const Rows front(s.rows.begin(), s.rows.begin() + static_cast<long>(limit));
  const RowScan scan = ScanRows(front);
  s.front_header.clear();
  s.front_first_data.clear();
  for (size_t i = 0; i < std::min(front.size(), static_cast<size_t>(kMaxHeaderRows)); ++i) {
    s.front_header.push_back(Signature(front[i], scan.row_effective_cols[i]));
  }
  for (size_t i = 0; i < scan.row_metrics.size(); ++i)
    s.front_first_data[static_cast<int>(i)] = scan.row_metrics[i];
}

int DetectHeaderRows(const TableState& a, const TableState& b) {
  const size_t n =
      std::min({a.front_header.size(), b.front_header.size(), static_cast<size_t>(kMaxHeaderRows)});
  int rows = 0;
  for (size_t i = 0; i < n; ++i) {
    const RowSignature &x = a.front_header[i], &y = b.front_header[i];
    if (x.colspans.size() == y.colspans.size() && x.effective_cols == y.effective_cols &&
        x.colspans == y.colspans && x.rowspans == y.rowspans && x.normalized == y.normalized) {
      ++rows;
    } else {
      break;
    }
  }
  if (rows > 0) return rows;
  for (size_t i = 0; i < n; ++i) {  // _detect_table_headers_visual
    if (a.front_header[i].normalized == b.front_header[i].normalized &&
        RenderedSegments(a.rows, static_cast<int>(i)) == RenderedSegments(b.rows, static_cast<int>(i))) {
      ++rows;
    } else {
      break;
    }
  }
  return rows;
}

}  // namespace

std::string FullToHalf(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    int len = 1;
    uint32_t cp = utf8::DecodeAt(s, i, &len);
    if (len <= 0) len = 1;
    if (cp >= 0xFF01 && cp <= 0xFF5E) {
      out += static_cast<char>(cp - 0xFEE0);
    } else {
      out.append(s, i, static_cast<size_t>(len));
    }
    i += static_cast<size_t>(len);
  }
  return out;
}

std::vector<html::Node*> Cells(html::Node* row) { return html::FindAll(row, {"td", "th"}); }

RowScan ScanRows(const Rows& rows, const Occupied& initial, int start_row_idx) {
  std::map<int, std::set<int>> occ;
  RowScan r;
  for (const auto& [off, cols] : initial) {
    if (cols.empty()) continue;
    occ[off] = cols;
    r.total_cols = std::max(r.total_cols, *cols.rbegin() + 1);
  }
  for (size_t li = 0; li < rows.size(); ++li) {
    const int local = static_cast<int>(li);
    occ[local];
    int col = 0, actual = 0;
    const auto cells = Cells(rows[li]);
    for (html::Node* c : cells) {
      while (occ[local].count(col)) ++col;
      const int cs = c->IntAttr("colspan", 1), rs = c->IntAttr("rowspan", 1);
      actual += cs;
      for (int ro = 0; ro < rs; ++ro) {
        for (int k = col; k < col + cs; ++k) occ[local + ro].insert(k);
      }
      col += cs;
      r.total_cols = std::max(r.total_cols, col);
    }
    const int eff = occ[local].empty() ? 0 : *occ[local].rbegin() + 1;
    r.row_effective_cols.push_back(eff);
    r.total_cols = std::max(r.total_cols, eff);
    RowMetrics m{start_row_idx + local, eff, actual, static_cast<int>(cells.size())};
    r.row_metrics.push_back(m);
    if (!cells.empty()) r.last_nonempty = m;
  }
  for (const auto& [row, cols] : occ) {
    if (row >= static_cast<int>(rows.size()) && !cols.empty())
      r.tail_occupied[row - static_cast<int>(rows.size())] = cols;
  }
  return r;
}

std::vector<int> VisualColMapping(const Rows& rows, int target, const Occupied& initial) {
  if (target < 0) target += static_cast<int>(rows.size());
  if (target < 0 || target >= static_cast<int>(rows.size())) return {};
  const auto occ = VisualSources(rows, target, initial).first;
  std::vector<int> mapping;
  int col = 0;
  for (html::Node* c : Cells(rows[target])) {
    while (occ.count(col) && occ.at(col).first < target) ++col;
    mapping.push_back(col);
    col += c->IntAttr("colspan", 1);
  }
  return mapping;
}

int RenderedSegments(const Rows& rows, int target) {
  const auto [occ, total] = VisualSources(rows, target, {});
  int count = 0;
  bool has_prev = false;
  std::pair<int, int> prev{0, 0};
  for (int c = 0; c < total; ++c) {
    const auto it = occ.find(c);
    if (it == occ.end()) {
      has_prev = false;
      continue;
    }
    if (!has_prev || prev != it->second) {
      ++count;
      prev = it->second;
      has_prev = true;
    }
  }
  return count;
}

std::optional<TableState> BuildTableState(const std::string& html) {
  if (html.empty()) return std::nullopt;
  TableState s;
  s.soup = html::Parse(html);
  const auto tb = html::FindAll(s.soup.get(), {"tbody"});
  const auto tables = html::FindAll(s.soup.get(), {"table"});
  s.tbody = !tb.empty() ? tb[0] : (!tables.empty() ? tables[0] : nullptr);
  s.rows = html::FindAll(s.soup.get(), {"tr"});
  RefreshTableState(s);
  return s;
}

void RefreshTableState(TableState& s) {
  const RowScan scan = ScanRows(s.rows);
  s.row_effective_cols = scan.row_effective_cols;
  s.total_cols = scan.total_cols;
  s.last_data = scan.last_nonempty;
  s.tail_occupied = scan.tail_occupied;
  BuildFrontCache(s);
}

int HeaderCount(const TableState& prev, const TableState& cur) {
  int hc = DetectHeaderRows(prev, cur);
  if (hc <= 0 || cur.rows.empty()) return hc;
  const int n = static_cast<int>(cur.rows.size());
  hc = std::min(hc, n);
  for (int r = 0; r < hc; ++r) {
    for (html::Node* c : Cells(cur.rows[r])) {
      const int rs = c->IntAttr("rowspan", 1);
      if (rs > 1) hc = std::min(std::max(hc, r + rs), n);
    }
  }
  return hc;
}

bool CheckRowsMatch(const TableState& prev, const TableState& cur) {
  if (!prev.last_data) return false;
  const auto it = cur.front_first_data.find(HeaderCount(prev, cur));
  if (it == cur.front_first_data.end()) return false;
  const RowMetrics &last = *prev.last_data, &first = it->second;
  return last.effective_cols == first.effective_cols || last.actual_cols == first.actual_cols ||
         RenderedSegments(prev.rows, last.row_idx) == RenderedSegments(cur.rows, first.row_idx);
}

}  // namespace mineru::pipeline::v34
