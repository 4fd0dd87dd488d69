// pipeline/extract/vlu_1_2/chart_repetition.cc — mineru-vl-utils 1.2.1 chart_invalid_repetition.py: when a
// chart's Markdown shows signs of degenerate repetition, keep only the largest well-formed table in it.
// Lengths are in code points as Python counts them; lowercasing is ASCII (the reference lowercases
// Unicode too; only non-ASCII letters differing in case could compare differently).
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "pipeline/common/py_text.h"
#include "pipeline/extract/vlu_1_2/post_process.h"

namespace mineru::pipeline {

namespace {

using Row = std::vector<std::string>;

size_t CpLen(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// re.sub(r"\s+", " ", s)
std::string CollapseSpaces(std::string_view s) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    size_t n = py::SpaceLen(s, i);
    if (n == 0) {
      out += s[i++];
      continue;
    }
    while (n) {
      i += n;
      n = i < s.size() ? py::SpaceLen(s, i) : 0;
    }
    out += ' ';
  }
  return out;
}

// split_markdown_row of the chart module: escapes and `code` spans protect '|'.
std::optional<Row> SplitRow(std::string_view line) {
  std::string_view t = py::Strip(line);
  if (t.empty() || t.find('|') == std::string_view::npos) return std::nullopt;
  if (py::StartsWith(t, "|")) t.remove_prefix(1);
  if (py::EndsWith(t, "|")) t.remove_suffix(1);
  Row cells;
  std::string buf;
  bool escaped = false, in_code = false;
  for (char c : t) {
    if (escaped) {
      buf += c;
      escaped = false;
    } else if (c == '\\') {
      escaped = true;
      buf += c;
    } else if (c == '`') {
      in_code = !in_code;
      buf += c;
    } else if (c == '|' && !in_code) {
      cells.emplace_back(py::Strip(buf));
      buf.clear();
    } else {
      buf += c;
    }
  }
  cells.emplace_back(py::Strip(buf));
  return cells;
}

// SEP_CELL_RE.fullmatch(cell.replace(" ", "")) for every cell: ^:?-{3,}:?$
bool IsSeparatorRow(const Row& cells) {
  if (cells.empty()) return false;
  for (const auto& cell : cells) {
    std::string c;
    for (char ch : cell) {
      if (ch != ' ') c += ch;
    }
    size_t p = 0;
    if (p < c.size() && c[p] == ':') ++p;
    const size_t d = p;
    while (p < c.size() && c[p] == '-') ++p;
    if (p - d < 3) return false;
    if (p < c.size() && c[p] == ':') ++p;
    if (p != c.size()) return false;
  }
  return true;
}

bool IsSeparatorLine(std::string_view line) {
  const auto r = SplitRow(line);
  return r && IsSeparatorRow(*r);
}

// detect_cell_repetition_issue: overlong cells or a fragment (split on ::, ;, ',' or '|') repeated 8 times.
bool CellRepeats(std::string_view cell) {
  if (CpLen(cell) > 300 || py::Count(cell, "::") > 20 || py::Count(cell, ";") > 30) return true;
  std::map<std::string, int> seen;
  size_t start = 0;
  auto fragment = [&](std::string_view f) {
    const std::string n = Lower(py::Strip(CollapseSpaces(f)));
    return CpLen(n) >= 3 && ++seen[n] >= 8;
  };
  // FRAGMENT_SPLIT_RE = \s*(?:::|;|,|\|)\s*; the spaces around a separator go with it and the
  // fragments are stripped anyway, so splitting on the bare separators gives the same fragments.
  size_t i = 0;
  while (i < cell.size()) {
    const size_t len = cell.substr(i, 2) == "::"                              ? 2
                       : (cell[i] == ';' || cell[i] == ',' || cell[i] == '|') ? 1
                                                                              : 0;
    if (len == 0) {
      ++i;
      continue;
    }
    if (fragment(cell.substr(start, i - start))) return true;
    i += len;
    start = i;
  }
  return fragment(cell.substr(start));
}

// detect_cell_repetition_pattern: data cells of tables (after the header and separator).
bool TableCellsRepeat(std::string_view content) {
  bool in_table = false, sep_seen = false;
  for (std::string_view line : py::SplitLines(content)) {
    const auto row = SplitRow(line);
    if (!row) {
      in_table = sep_seen = false;
    } else if (!in_table) {
      in_table = true;
      sep_seen = false;
    } else if (!sep_seen) {
      sep_seen = IsSeparatorRow(*row);
    } else {
      for (const auto& c : *row) {
        if (!py::IsBlank(c) && CellRepeats(py::Strip(c))) return true;
      }
    }
  }
  return false;
}

bool WholeContentRepeats(std::string_view content) {
  const std::string compact(py::Strip(CollapseSpaces(content)));
  if (CpLen(compact) < 80) return false;
  const size_t period = (compact + compact).find(compact, 1);
  return period > 0 && period < compact.size() && compact.size() % period == 0;
}

// REPEAT_TOKEN_RE = [A-Za-z0-9]+(?:[-_./][A-Za-z0-9]+)*|[^\s]
std::vector<std::string> Tokens(std::string_view s) {
  auto alnum = [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  };
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    if (const size_t n = py::SpaceLen(s, i)) {
      i += n;
    } else if (alnum(s[i])) {
      size_t j = i;
      while (j < s.size() && alnum(s[j])) ++j;
      while (j + 1 < s.size() && (s[j] == '-' || s[j] == '_' || s[j] == '.' || s[j] == '/') &&
             alnum(s[j + 1])) {
        ++j;
        while (j < s.size() && alnum(s[j])) ++j;
      }
      out.emplace_back(s.substr(i, j - i));
      i = j;
    } else {
      size_t j = i + 1;
      while (j < s.size() && (static_cast<unsigned char>(s[j]) & 0xC0) == 0x80) ++j;
      out.emplace_back(s.substr(i, j - i));
      i = j;
    }
  }
  return out;
}

bool RepeatedCharRun(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    size_t j = i;
    while (j < s.size() && s[j] == c) ++j;
    const bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (alnum && j - i >= 20) return true;
    i = j;
  }
  return false;
}

bool LinesRepeat(std::string_view content) {
  size_t b = 0, e = content.size();
  while (b < e && content[b] == '\n') ++b;
  while (e > b && content[e - 1] == '\n') --e;
  std::vector<std::string_view> lines;
  for (std::string_view l : py::SplitLines(content.substr(b, e - b))) lines.push_back(py::Strip(l));
  for (size_t i = 0; i < lines.size();) {
    if (lines[i].empty()) {
      ++i;
      continue;
    }
    size_t j = i + 1;
    while (j < lines.size() && lines[j] == lines[i]) ++j;
    const size_t count = j - i;
    if ((count >= 2 && CpLen(lines[i]) >= 30) || count >= 3) return true;
    i = j;
  }
  std::map<std::string_view, int> seen;
  for (std::string_view l : lines) {
    if (CpLen(l) >= 30 && !IsSeparatorLine(l) && ++seen[l] >= 4) return true;
  }
  return false;
}

bool TokensRepeat(std::string_view content) {
  std::string text;
  bool first = true;
  for (std::string_view l : py::SplitLines(content)) {
    if (IsSeparatorLine(l)) continue;
    if (!first) text += '\n';
    text.append(l);
    first = false;
  }
  const std::vector<std::string> tokens = Tokens(text);
  for (size_t i = 0; i < tokens.size();) {
    const std::string low = Lower(tokens[i]);
    size_t j = i + 1;
    while (j < tokens.size() && Lower(tokens[j]) == low) ++j;
    if (j - i >= 8) return true;
    i = j;
  }
  return false;
}

// validate_content_repetition(content) is non-empty.
bool HasRepetition(std::string_view content) {
  return content.find("\\|") != std::string_view::npos ||
         content.find("\n\n\n\n\n") != std::string_view::npos || WholeContentRepeats(content) ||
         RepeatedCharRun(content) || TableCellsRepeat(content) || LinesRepeat(content) ||
         TokensRepeat(content);
}

// ---- repair: the largest legal table ----

std::optional<Row> SplitRepairRow(std::string_view line) {
  std::string n(py::Strip(line));
  n = py::ReplaceAll(py::ReplaceAll(n, "\xEF\xBD\x9C", "|"), "\xC2\xA6", "|");  // U+FF5C, U+00A6
  n = py::ReplaceAll(n, "\\|", "|");
  if (n.find('|') == std::string::npos) return std::nullopt;
  auto cells = SplitRow(n);
  if (!cells || cells->size() < 2) return std::nullopt;
  return cells;
}

bool NoisyRow(const Row& cells) {
  if (IsSeparatorRow(cells)) return false;
  for (const auto& c : cells) {
    if (!py::IsBlank(c) && CellRepeats(py::Strip(c))) return true;
  }
  return false;
}

std::string CleanCell(std::string_view cell) {
  std::string c(py::Strip(CollapseSpaces(py::ReplaceAll(cell, "\t", " "))));
  if (py::Count(c, "`") % 2 == 1) c += '`';
  return py::ReplaceAll(c, "|", "\\|");
}

std::string FormatRow(const Row& cells) {
  std::string s = "| ";
  for (size_t i = 0; i < cells.size(); ++i) s += (i ? " | " : "") + CleanCell(cells[i]);
  return s + " |";
}

std::string FormatSeparator(size_t cols) {
  std::string s = "| ";
  for (size_t i = 0; i < cols; ++i) s += i ? " | ---" : "---";
  return s + " |";
}

std::vector<std::vector<Row>> TableBlocks(std::string_view content) {
  std::vector<std::vector<Row>> blocks;
  std::vector<Row> cur;
  bool sep_seen = false;
  for (std::string_view line : py::SplitLines(content)) {
    auto cells = SplitRepairRow(line);
    if (!cells) {
      if (!cur.empty()) blocks.push_back(std::move(cur));
      cur.clear();
      sep_seen = false;
    } else if (cur.empty()) {
      cur.push_back(std::move(*cells));
      sep_seen = false;
    } else if (!sep_seen) {
      sep_seen = IsSeparatorRow(*cells);
      cur.push_back(std::move(*cells));
    } else if (!NoisyRow(*cells)) {
      cur.push_back(std::move(*cells));
    }
  }
  if (!cur.empty()) blocks.push_back(std::move(cur));
  return blocks;
}

std::optional<std::string> Candidate(const std::vector<Row>& rows, size_t sep) {
  if (sep == 0) return std::nullopt;
  const Row& header = rows[sep - 1];
  if (header.size() < 2 || IsSeparatorRow(header)) return std::nullopt;
  std::string out = FormatRow(header) + "\n" + FormatSeparator(header.size());
  size_t data = 0;
  for (size_t i = sep + 1; i < rows.size() && !IsSeparatorRow(rows[i]) && rows[i].size() == header.size();
       ++i) {
    out += "\n" + FormatRow(rows[i]);
    ++data;
  }
  if (data == 0) return std::nullopt;
  return out;
}

std::vector<std::string> FallbackCandidates(const std::vector<Row>& rows) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < rows.size()) {
    if (IsSeparatorRow(rows[i]) || rows[i].size() < 2) {
      ++i;
      continue;
    }
    size_t j = i + 1;
    while (j < rows.size() && !IsSeparatorRow(rows[j]) && rows[j].size() == rows[i].size()) ++j;
    if (j - i >= 2) {
      std::string t = FormatRow(rows[i]) + "\n" + FormatSeparator(rows[i].size());
      for (size_t k = i + 1; k < j; ++k) t += "\n" + FormatRow(rows[k]);
      out.push_back(std::move(t));
    }
    i = std::max(j, i + 1);
  }
  return out;
}

bool PipeBounded(std::string_view line) {
  const std::string_view s = py::Strip(line);
  return py::StartsWith(s, "|") && py::EndsWith(s, "|");
}

bool ValidTable(std::string_view table) {
  const std::vector<std::string_view> lines = py::SplitLines(py::Strip(table));
  if (lines.size() < 3) return false;
  const auto header = SplitRow(lines[0]), sep = SplitRow(lines[1]);
  if (!header || !sep || !IsSeparatorRow(*sep) || !PipeBounded(lines[0]) || !PipeBounded(lines[1]))
    return false;
  if (header->size() != sep->size()) return false;
  for (size_t i = 2; i < lines.size(); ++i) {
    const auto row = SplitRow(lines[i]);
    if (!row || !PipeBounded(lines[i]) || row->size() != header->size()) return false;
  }
  return true;
}

std::tuple<size_t, size_t, size_t> Score(const std::string& table) {
  const auto lines = py::SplitLines(table);
  const auto first = SplitRow(lines[0]);
  return {lines.size(), first ? first->size() : 0, CpLen(table)};
}

std::string LargestLegalTable(std::string_view content) {
  std::vector<std::string> cands;
  for (const auto& rows : TableBlocks(content)) {
    for (size_t i = 0; i < rows.size(); ++i) {
      if (!IsSeparatorRow(rows[i])) continue;
      if (auto c = Candidate(rows, i); c && ValidTable(*c)) cands.push_back(*c);
    }
    for (auto& c : FallbackCandidates(rows)) {
      if (ValidTable(c)) cands.push_back(std::move(c));
    }
  }
  if (cands.empty()) return "";
  size_t best = 0;
  for (size_t i = 1; i < cands.size(); ++i) {
    if (Score(cands[i]) > Score(cands[best])) best = i;  // max() keeps the first of equal scores
  }
  return cands[best];
}

}  // namespace

std::string FixChartRepetition(std::string_view content) {
  if (!HasRepetition(content)) return std::string(content);
  std::string fixed = LargestLegalTable(content);
  return fixed.empty() ? std::string(content) : fixed;
}

}  // namespace mineru::pipeline
