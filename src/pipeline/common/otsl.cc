// pipeline/common/otsl.cc — OTSL -> HTML, a step-by-step re-expression of mineru-vl-utils otsl2html.py
// (otsl_extract_tokens_and_text, otsl_parse_texts, export_to_html, convert_otsl_to_html).
#include "pipeline/common/otsl.h"

#include <algorithm>
#include <array>
#include <vector>

#include "pipeline/common/py_text.h"

namespace mineru::pipeline {

namespace {

enum Tag : int { kNone = -1, kNl = 0, kFcel, kEcel, kLcel, kUcel, kXcel };

constexpr std::array<std::string_view, 6> kTagText = {"<nl>",   "<fcel>", "<ecel>",
                                                      "<lcel>", "<ucel>", "<xcel>"};

// One element of the "texts" list of the reference: either a tag or a (non-blank) text piece.
struct Part {
  Tag tag = kNone;
  std::string_view text;  // only for text pieces
  bool is_tag() const { return tag != kNone; }
};

Tag TagAt(std::string_view s, size_t pos) {
  if (s[pos] != '<') return kNone;
  for (int t = 0; t < 6; ++t) {
    if (s.substr(pos, kTagText[t].size()) == kTagText[t]) return static_cast<Tag>(t);
  }
  return kNone;
}

// re.findall / re.split of "(<nl>|<fcel>|<ecel>|<lcel>|<ucel>|<xcel>)"; blank pieces are dropped from
// the parts list exactly as `[part for part in text_parts if part.strip()]` does.
void ExtractTokensAndText(std::string_view s, std::vector<Tag>& tokens, std::vector<Part>& parts) {
  size_t piece_start = 0;
  auto flush_text = [&](size_t end) {
    const std::string_view piece = s.substr(piece_start, end - piece_start);
    if (!py::IsBlank(piece)) parts.push_back(Part{kNone, piece});
  };
  size_t pos = 0;
  while (pos < s.size()) {
    const Tag t = TagAt(s, pos);
    if (t == kNone) {
      ++pos;
      continue;
    }
    flush_text(pos);
    tokens.push_back(t);
    parts.push_back(Part{t, {}});
    pos += kTagText[t].size();
    piece_start = pos;
  }
  flush_text(s.size());
}

struct Cell {
  std::string text;
  int row_span = 1, col_span = 1;
  int start_row = 0, end_row = 0, start_col = 0, end_col = 0;
};

// itertools.groupby(tokens, lambda z: z == "<nl>"), keeping the non-<nl> groups.
std::vector<std::vector<Tag>> GroupRows(const std::vector<Tag>& tokens) {
  std::vector<std::vector<Tag>> rows;
  for (size_t i = 0; i < tokens.size();) {
    if (tokens[i] == kNl) {
      ++i;
      continue;
    }
    std::vector<Tag> row;
    while (i < tokens.size() && tokens[i] != kNl) row.push_back(tokens[i++]);
    rows.push_back(std::move(row));
  }
  return rows;
}

// Pads every row to the widest with <ecel> and rebuilds `texts` to contain the padding. A text
// piece follows a token only while the original list is consumed in step; a mismatch is never
// recovered from. Rows must be non-empty.
void PadRows(std::vector<std::vector<Tag>>& rows, std::vector<Part>& texts) {
  size_t max_cols = 0;
  for (const auto& r : rows) max_cols = std::max(max_cols, r.size());
  for (auto& r : rows) r.resize(max_cols, kEcel);

  std::vector<Part> rebuilt;
  size_t ti = 0;
  for (const auto& row : rows) {
    for (Tag token : row) {
      rebuilt.push_back(Part{token, {}});
      if (ti < texts.size() && texts[ti].tag == token) {
        ++ti;
        if (ti < texts.size() && !texts[ti].is_tag()) rebuilt.push_back(texts[ti++]);
      }
    }
    rebuilt.push_back(Part{kNl, {}});
    if (ti < texts.size() && texts[ti].tag == kNl) ++ti;
  }
  texts = std::move(rebuilt);
}

// otsl_parse_texts: one Cell per <fcel>/<ecel>, spanning the <lcel>/<xcel> to its right and the
// <ucel>/<xcel> below it.
std::vector<Cell> ParseCells(const std::vector<std::vector<Tag>>& rows, const std::vector<Part>& texts) {
  auto in = [](Tag t, Tag a, Tag b) { return t == a || t == b; };
  const int nrows = static_cast<int>(rows.size());
  std::vector<Cell> cells;
  int r_idx = 0, c_idx = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const Part& part = texts[i];
    if (part.tag == kFcel || part.tag == kEcel) {
      Cell cell;
      size_t right_offset = 1;
      std::string_view cell_text;
      if (part.tag != kEcel && i + 1 < texts.size() && !texts[i + 1].is_tag()) {
        cell_text = texts[i + 1].text;
        right_offset = 2;
      }
      const Tag next_right = i + right_offset < texts.size() ? texts[i + right_offset].tag : kNone;
      Tag next_bottom = kNone;
      if (r_idx + 1 < nrows && c_idx < static_cast<int>(rows[r_idx + 1].size())) {
        next_bottom = rows[r_idx + 1][c_idx];
      }
      if (in(next_right, kLcel, kXcel)) {
        const auto& row = rows[r_idx];
        int c = c_idx + 1;
        while (c < static_cast<int>(row.size()) && in(row[c], kLcel, kXcel)) {
          ++cell.col_span;
          ++c;
        }
      }
      if (in(next_bottom, kUcel, kXcel)) {
        int r = r_idx + 1;
        while (r < nrows && in(rows[r][c_idx], kUcel, kXcel)) {
          ++cell.row_span;
          ++r;
        }
      }
      cell.text = std::string(py::Strip(cell_text));
      cell.start_row = r_idx;
      cell.end_row = r_idx + cell.row_span;
      cell.start_col = c_idx;
      cell.end_col = c_idx + cell.col_span;
      cells.push_back(std::move(cell));
    }
    if (part.is_tag() && part.tag != kNl) ++c_idx;
    if (part.tag == kNl) {
      ++r_idx;
      c_idx = 0;
    }
  }
  return cells;
}

// export_to_html: the grid of rows x widest-row cells, each cell written at its top-left corner.
std::string ExportHtml(const std::vector<std::vector<Tag>>& rows, const std::vector<Cell>& cells) {
  const int nrows = static_cast<int>(rows.size());
  int ncols = 0;
  for (const auto& r : rows) ncols = std::max(ncols, static_cast<int>(r.size()));
  // Grid of cell indices; -1 is the reference's default empty cell anchored at its own position.
  std::vector<std::vector<int>> grid(nrows, std::vector<int>(ncols, -1));
  for (size_t k = 0; k < cells.size(); ++k) {
    const Cell& c = cells[k];
    for (int i = std::min(c.start_row, nrows); i < std::min(c.end_row, nrows); ++i) {
      for (int j = std::min(c.start_col, ncols); j < std::min(c.end_col, ncols); ++j)
        grid[i][j] = static_cast<int>(k);
    }
  }

  std::string html = "<table>";
  for (int i = 0; i < nrows; ++i) {
    html += "<tr>";
    for (int j = 0; j < ncols; ++j) {
      const int k = grid[i][j];
      if (k < 0) {
        html += "<td></td>";
        continue;
      }
      const Cell& c = cells[k];
      if (c.start_row != i || c.start_col != j) continue;
      html += "<td";
      if (c.row_span > 1) html += " rowspan=\"" + std::to_string(c.row_span) + "\"";
      if (c.col_span > 1) html += " colspan=\"" + std::to_string(c.col_span) + "\"";
      html += ">";
      html += py::HtmlEscape(py::Strip(c.text));
      html += "</td>";
    }
    html += "</tr>";
  }
  html += "</table>";
  return html;
}

}  // namespace

std::string OtslToHtml(std::string_view otsl) {
  if (py::StartsWith(otsl, "<table") && py::EndsWith(otsl, "</table>")) return std::string(otsl);

  std::vector<Tag> tokens;
  std::vector<Part> texts;
  ExtractTokensAndText(otsl, tokens, texts);
  std::vector<std::vector<Tag>> rows = GroupRows(tokens);
  if (!rows.empty()) PadRows(rows, texts);
  const std::vector<Cell> cells = ParseCells(rows, texts);
  if (cells.empty()) return "";
  return ExportHtml(rows, cells);
}

}  // namespace mineru::pipeline
