// pipeline/extract/vlu_1_2/post_process.cc — 1.2.1 text/table fixers and the page chain (see post_process.h).
#include "pipeline/extract/vlu_1_2/post_process.h"

#include "base/check.h"
#include "pipeline/common/equation_blocks.h"
#include "pipeline/common/formula.h"
#include "pipeline/common/otsl.h"
#include "pipeline/common/py_text.h"

namespace mineru::pipeline {

namespace {

constexpr std::string_view kInlineOpen = "\\(";
constexpr std::string_view kInlineClose = "\\)";
constexpr std::string_view kDisplayOpen = "\\[";
constexpr std::string_view kDisplayClose = "\\]";

// One non-overlapping left-to-right pass of `OPEN(.*?)CLOSE` (min_inner 0) or `OPEN(.+?)CLOSE`
// (min_inner 1), DOTALL: `fn(inner)` replaces each match, the text between matches is kept (or passed
// to `gap` when given). When an OPEN has no CLOSE after it, no later OPEN can have one either.
template <typename Fn, typename Gap>
std::string SubDelimited(std::string_view s, std::string_view open, std::string_view close, size_t min_inner,
                         Fn fn, Gap gap) {
  std::string out;
  size_t pos = 0;
  while (true) {
    const size_t o = s.find(open, pos);
    if (o == std::string_view::npos) break;
    const size_t c = s.find(close, o + open.size() + min_inner);
    if (c == std::string_view::npos) break;
    out += gap(s.substr(pos, o - pos));
    out += fn(s.substr(o + open.size(), c - o - open.size()), s.substr(o, c + close.size() - o));
    pos = c + close.size();
  }
  out += gap(s.substr(pos));
  return out;
}

std::string Keep(std::string_view s) { return std::string(s); }

bool IsAsciiLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// re.fullmatch(r"[–\d\-,\s]+", inner) with ASCII digits.
bool OnlyNumbersAndSeparators(std::string_view inner) {
  if (inner.empty()) return false;
  size_t i = 0;
  while (i < inner.size()) {
    const char c = inner[i];
    if ((c >= '0' && c <= '9') || c == '-' || c == ',') {
      ++i;
    } else if (inner.substr(i, 3) == "\xE2\x80\x93") {  // U+2013 EN DASH
      i += 3;
    } else if (const size_t n = py::SpaceLen(inner, i)) {
      i += n;
    } else {
      return false;
    }
  }
  return true;
}

// fix_macro_spacing for one macro: re.sub(escape(macro) + r"([a-zA-Z])(?![a-zA-Z])", ...).
std::string FixOneMacro(std::string_view s, std::string_view macro) {
  std::string out;
  size_t pos = 0;
  while (true) {
    size_t m = s.find(macro, pos);
    // Scan forward for the first occurrence that matches the whole pattern.
    while (m != std::string_view::npos) {
      const size_t l = m + macro.size();
      if (l < s.size() && IsAsciiLetter(s[l]) && (l + 1 >= s.size() || !IsAsciiLetter(s[l + 1]))) break;
      m = s.find(macro, m + 1);
    }
    if (m == std::string_view::npos) break;
    const size_t l = m + macro.size();
    const std::string word = std::string(macro) + s[l];
    out.append(s.substr(pos, m - pos));
    if (word == "\\top" || word == "\\int" || word == "\\inf") {
      out += word;
    } else {
      out += std::string(macro) + " " + s[l];
    }
    pos = l + 1;
  }
  out.append(s.substr(pos));
  return out;
}

bool IsUnderscoreRun(std::string_view s) {
  return s.size() >= 3 && s.find_first_not_of('_') == std::string_view::npos;
}

// re.split(r"(_{3,})", inner): pieces alternate text / run.
std::vector<std::string_view> SplitUnderscoreRuns(std::string_view s) {
  std::vector<std::string_view> parts;
  size_t pos = 0, i = 0;
  while (i < s.size()) {
    if (s[i] != '_') {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < s.size() && s[j] == '_') ++j;
    if (j - i >= 3) {
      parts.push_back(s.substr(pos, i - pos));
      parts.push_back(s.substr(i, j - i));
      pos = j;
    }
    i = j;
  }
  parts.push_back(s.substr(pos));
  return parts;
}

std::string WrapEq(std::string_view inner, std::string_view) {
  return "<eq>" + std::string(py::Strip(inner)) + "</eq>";
}

}  // namespace

std::string TextDisplayToInline(std::string_view text) {
  return SubDelimited(
      text, kDisplayOpen, kDisplayClose, 0,
      [](std::string_view inner, std::string_view) {
        const bool numbers = OnlyNumbersAndSeparators(inner);
        return std::string(numbers ? "\\[" : "\\(") + std::string(inner) + (numbers ? "\\]" : "\\)");
      },
      Keep);
}

std::string TextMacroSpacing(std::string_view text) {
  return SubDelimited(
      text, kInlineOpen, kInlineClose, 0,
      [](std::string_view inner, std::string_view) {
        std::string fixed(inner);
        for (std::string_view macro : {"\\cong", "\\to", "\\times", "\\subset", "\\in"})
          fixed = FixOneMacro(fixed, macro);
        return "\\(" + fixed + "\\)";
      },
      Keep);
}

std::string TextUnderscoresOutside(std::string_view text) {
  return SubDelimited(
      text, kInlineOpen, kInlineClose, 1,
      [](std::string_view inner, std::string_view whole) {
        const auto parts = SplitUnderscoreRuns(inner);
        if (parts.size() == 1) return std::string(whole);
        std::string out;
        bool first = true;
        for (std::string_view p : parts) {
          std::string piece;
          if (IsUnderscoreRun(p)) {
            piece = std::string(p);
          } else if (!py::IsBlank(p)) {
            piece = "\\(" + std::string(p) + "\\)";
          } else {
            continue;
          }
          if (!first) out += ' ';
          out += piece;
          first = false;
        }
        return out;
      },
      Keep);
}

std::string ReplaceTableImageTokens(std::string_view html, const TableImageTokens& tokens) {
  std::string s(html);
  for (const auto& [token, uri] : tokens) {
    if (token.size() < 2) continue;
    const std::string_view inner = std::string_view(token).substr(1, token.size() - 2);
    std::string out;
    size_t pos = 0;
    for (size_t o = s.find('['); o != std::string::npos; o = s.find('[', o + 1)) {
      if (o < pos) continue;
      size_t p = o + 1;
      while (p < s.size() && py::SpaceLen(s, p)) p += py::SpaceLen(s, p);
      if (s.compare(p, inner.size(), inner) != 0) continue;
      p += inner.size();
      while (p < s.size() && py::SpaceLen(s, p)) p += py::SpaceLen(s, p);
      if (p >= s.size() || s[p] != ']') continue;
      out.append(s, pos, o - pos);
      out += "<img src=\"" + uri + "\"/>";
      pos = p + 1;
    }
    out.append(s, pos, std::string::npos);
    s = std::move(out);
  }
  return s;
}

std::string TableFormulaToEq(std::string_view html) {
  // Existing <eq>..</eq> pieces are kept; the text between them gets \(..\) then \[..\] wrapped.
  return SubDelimited(
      html, "<eq>", "</eq>", 0, [](std::string_view, std::string_view whole) { return std::string(whole); },
      [](std::string_view part) {
        const std::string a = SubDelimited(part, kInlineOpen, kInlineClose, 1, WrapEq, Keep);
        return SubDelimited(a, kDisplayOpen, kDisplayClose, 1, WrapEq, Keep);
      });
}

}  // namespace mineru::pipeline

// ---- Image Analysis ------------------------------------------------------------------------------

namespace mineru::pipeline {

namespace {

// _extract_tagged_field: the stripped text between the first start tag and the next end tag.
std::string TaggedField(std::string_view text, std::string_view start, std::string_view end) {
  size_t s = text.find(start);
  if (s == std::string_view::npos) return "";
  s += start.size();
  const size_t e = text.find(end, s);
  if (e == std::string_view::npos) return "";
  return std::string(py::Strip(text.substr(s, e - s)));
}

std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// Strips one leading and one trailing '|' of the stripped line.
std::string_view TrimPipes(std::string_view line) {
  std::string_view s = py::Strip(line);
  if (py::StartsWith(s, "|")) s.remove_prefix(1);
  if (py::EndsWith(s, "|")) s.remove_suffix(1);
  return s;
}

size_t CountColumns(std::string_view line) { return py::Count(TrimPipes(line), "|") + 1; }

bool IsRowCandidate(std::string_view line) {
  const std::string_view s = py::Strip(line);
  return !s.empty() && s.find('|') != std::string_view::npos && CountColumns(s) >= 2;
}

void SkipSpaces(std::string_view s, size_t& pos) {
  while (pos < s.size()) {
    const size_t n = py::SpaceLen(s, pos);
    if (n == 0) break;
    pos += n;
  }
}

// `\s*:?-{3,}:?\s*` at pos.
bool SeparatorCell(std::string_view s, size_t& pos) {
  size_t p = pos;
  SkipSpaces(s, p);
  if (p < s.size() && s[p] == ':') ++p;
  const size_t d = p;
  while (p < s.size() && s[p] == '-') ++p;
  if (p - d < 3) return false;
  if (p < s.size() && s[p] == ':') ++p;
  SkipSpaces(s, p);
  pos = p;
  return true;
}

// re.match(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)+\|?\s*$", line) on a line without breaks.
bool IsSeparatorLine(std::string_view s) {
  size_t pos = 0;
  SkipSpaces(s, pos);
  if (pos < s.size() && s[pos] == '|') ++pos;
  if (!SeparatorCell(s, pos)) return false;
  int groups = 0;
  while (pos < s.size() && s[pos] == '|') {
    size_t p = pos + 1;
    if (!SeparatorCell(s, p)) break;
    pos = p;
    ++groups;
  }
  if (groups == 0) return false;
  if (pos < s.size() && s[pos] == '|') ++pos;
  SkipSpaces(s, pos);
  return pos == s.size();
}

// _split_markdown_table_row: '\|' is an escaped pipe, other backslashes are kept.
std::vector<std::string> SplitRow(std::string_view line) {
  const std::string_view s = TrimPipes(line);
  std::vector<std::string> cells;
  std::string cur;
  bool escaped = false;
  for (char c : s) {
    if (escaped) {
      if (c != '|') cur += '\\';
      cur += c;
      escaped = false;
    } else if (c == '\\') {
      escaped = true;
    } else if (c == '|') {
      cells.emplace_back(py::Strip(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (escaped) cur += '\\';
  cells.emplace_back(py::Strip(cur));
  return cells;
}

}  // namespace

std::optional<std::string> MarkdownTableToHtml(std::string_view content) {
  if (py::IsBlank(content)) return std::nullopt;
  std::vector<std::string_view> lines;
  for (std::string_view l : py::SplitLines(py::Strip(content))) lines.push_back(py::Strip(l));
  if (lines.size() < 2) return std::nullopt;
  for (std::string_view l : lines) {
    if (l.empty()) return std::nullopt;
  }
  if (!IsRowCandidate(lines[0]) || !IsSeparatorLine(lines[1])) return std::nullopt;
  const std::vector<std::string> header = SplitRow(lines[0]);
  if (header.size() < 2 || SplitRow(lines[1]).size() != header.size()) return std::nullopt;
  std::string body;
  for (size_t i = 2; i < lines.size(); ++i) {
    if (!IsRowCandidate(lines[i])) return std::nullopt;
    const std::vector<std::string> row = SplitRow(lines[i]);
    if (row.size() != header.size()) return std::nullopt;
    body += "<tr>";
    for (const auto& c : row) body += "<td>" + py::HtmlEscape(c) + "</td>";
    body += "</tr>";
  }
  std::string html = "<table><tr>";
  for (const auto& c : header) html += "<th>" + py::HtmlEscape(c) + "</th>";
  return html + "</tr>" + body + "</table>";
}

bool HasMalformedMarkdownTable(std::string_view content) {
  const std::vector<std::string_view> lines = py::SplitLines(content);
  size_t candidates = 0;
  for (std::string_view l : lines) candidates += IsRowCandidate(l) ? 1 : 0;
  bool found_valid = false;
  for (size_t sep = 0; sep < lines.size(); ++sep) {
    if (!IsSeparatorLine(lines[sep])) continue;
    long header = static_cast<long>(sep) - 1;
    while (header >= 0 && py::IsBlank(lines[header])) --header;
    if (header < 0 || !IsRowCandidate(lines[header])) return true;
    const size_t cols = CountColumns(lines[header]);
    if (cols < 2 || CountColumns(lines[sep]) != cols) return true;
    for (size_t r = sep + 1; r < lines.size(); ++r) {
      if (py::IsBlank(lines[r]) || !IsRowCandidate(lines[r])) break;
      if (CountColumns(lines[r]) != cols) return true;
    }
    found_valid = true;
  }
  return candidates >= 2 && !found_valid;
}

namespace {

// re.sub(r"^(a|b|c)\b", to, code, flags=re.IGNORECASE) for alternatives tried in order.
std::string FixHeaderWord(const std::string& code, std::initializer_list<std::string_view> alts,
                          std::string_view to) {
  const std::string lower = AsciiLower(code);
  for (std::string_view a : alts) {
    if (!py::StartsWith(lower, a)) continue;
    const unsigned char next = a.size() < code.size() ? static_cast<unsigned char>(code[a.size()]) : 0;
    const bool word = next >= 0x80 || std::isalnum(next) || next == '_';
    if (a.size() < code.size() && word) continue;
    return std::string(to) + code.substr(a.size());
  }
  return code;
}

}  // namespace

std::string MermaidStrict(std::string_view content) {
  if (py::IsBlank(content)) return "";
  const std::string_view c = py::Strip(content);
  std::string code;
  const size_t m = c.find("```mermaid");
  const size_t m_end = m == std::string_view::npos ? m : c.find("```", m + 10);
  const size_t f = c.find("```");
  const size_t f_end = f == std::string_view::npos ? f : c.find("```", f + 3);
  if (m != std::string_view::npos && m_end != std::string_view::npos) {
    code = std::string(py::Strip(c.substr(m + 10, m_end - m - 10)));
  } else if (f != std::string_view::npos && f_end != std::string_view::npos) {
    code = std::string(py::Strip(c.substr(f + 3, f_end - f - 3)));
  } else {
    code = std::string(c);
  }
  if (py::StartsWith(AsciiLower(code), "mermaid"))
    code = std::string(py::Strip(std::string_view(code).substr(7)));
  code = FixHeaderWord(code, {"grap", "grapg", "graphh"}, "graph");
  code = FixHeaderWord(code, {"flowchar", "flowchartt"}, "flowchart");
  return "```mermaid\n" + MermaidFixArrowsAndNodes(code) + "\n```";
}

ImageAnalysis ProcessImageAnalysis(std::string_view raw) {
  ImageAnalysis a;
  a.cls = AsciiLower(TaggedField(raw, "<|class_start|>", "<|class_end|>"));
  a.sub_class = AsciiLower(TaggedField(raw, "<|sub_class_start|>", "<|sub_class_end|>"));
  a.caption = TaggedField(raw, "<|caption_start|>", "<|caption_end|>");
  a.content = TaggedField(raw, "<|content_start|>", "<|content_end|>");
  if (a.content.empty() && py::Count(raw, "<|content_start|>") == 1 &&
      py::Count(raw, "<|content_end|>") == 0) {
    a.content = std::string(raw.substr(raw.find("<|content_start|>") + 17));
  }
  if (a.cls == "chemical") {
    a.content.clear();
  } else if (a.cls == "flowchart") {
    a.content = MermaidHasRepetition(a.content)
                    ? std::string()
                    : MermaidInvalidSubgraphLines(MermaidInvalidEdgeLines(MermaidNodeIdLegalize(a.content)));
    a.content = MermaidStrict(a.content);
  } else if (a.cls == "chart") {
    a.content = FixChartRepetition(a.content);
    if (!a.content.empty() && HasMalformedMarkdownTable(a.content)) a.content.clear();
  }
  return a;
}

}  // namespace mineru::pipeline

// ---- The page chain ------------------------------------------------------------------------------

namespace mineru::pipeline {

namespace {

bool HasText(const ContentBlock& b) { return b.content.has_value() && !b.content->empty(); }

// _convert_pure_table_content_to_html.
std::string PureTableToHtml(const std::string& content) {
  if (py::IsBlank(content)) return "";
  const std::string_view s = py::Strip(content);
  const std::string lower = [&] {
    std::string l(s);
    for (char& c : l) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return l;
  }();
  if (py::StartsWith(lower, "<table") && py::EndsWith(lower, "</table>")) return std::string(s);
  if (auto md = MarkdownTableToHtml(content)) return *md;
  for (std::string_view tok : {"<nl>", "<fcel>", "<ecel>", "<lcel>", "<ucel>", "<xcel>"}) {
    if (content.find(tok) != std::string::npos) {
      std::string html = OtslToHtml(content);
      return py::IsBlank(html) ? std::string() : html;
    }
  }
  return "";
}

// The image/chart branch of simple_process.
void ApplyImageAnalysis(ContentBlock& b) {
  const ImageAnalysis a = ProcessImageAnalysis(*b.content);
  b.merge_prev.reset();
  if (a.cls == "pure_table") {
    b.type = "table";
    const std::string html = PureTableToHtml(a.content);
    b.content = html.empty() ? std::string() : TableFormulaToEq(html);
  } else if (a.cls == "pure_formula") {
    b.type = "equation";
    b.content = a.content;
  } else if (a.cls == "chart") {
    b.type = "chart";
    b.sub_type = a.sub_class;
    b.content = a.content;
  } else {
    b.type = "image";
    b.sub_type = a.cls;
    b.content = (a.cls == "natural_image" || a.content.empty()) ? a.caption : a.content;
  }
}

// _cleanup_non_text_placeholder_blocks, as flags over the page's blocks: false = dropped.
std::vector<bool> KeepAfterNonText(std::vector<ContentBlock>& blocks) {
  std::vector<bool> keep(blocks.size(), true);
  for (size_t i = 0; i < blocks.size(); ++i) {
    ContentBlock& b = blocks[i];
    if (!b.content || py::Strip(*b.content) != "[Non-Text]") continue;
    if (b.type == "header" || b.type == "footer") {
      b.content = std::string();
    } else {
      keep[i] = b.type == "image" || b.type == "chart" || b.type == "table" || b.type == "equation" ||
                b.type == "list" || b.type == "image_block" || b.type == "equation_block";
    }
  }
  return keep;
}

// Whether do_handle_equation_block raises: an equation_block covering more than one equation, one of
// which has no content (not requested: its crop was empty), makes _combined_equations fail on None.
bool EquationBlockMergeRaises(const std::vector<ContentBlock>& blocks) {
  for (const auto& sem : blocks) {
    if (sem.type != "equation_block") continue;
    int covered = 0;
    bool none = false;
    for (const auto& eq : blocks) {
      if (eq.type == "equation" && BboxCoverRatio(sem.bbox, eq.bbox) > 0.9) {
        ++covered;
        none = none || !eq.content;
      }
    }
    if (covered > 1 && none) return true;
  }
  return false;
}

}  // namespace

std::vector<ContentBlock> PostProcessPageV12(const std::vector<LayoutBlock>& layout,
                                             const std::vector<std::optional<std::string>>& recognised,
                                             const std::vector<bool>& absorbed,
                                             const std::vector<TableImageTokens>& table_tokens) {
  MINERU_CHECK(layout.size() == recognised.size());
  std::vector<ContentBlock> blocks;
  for (size_t i = 0; i < layout.size(); ++i) {
    ContentBlock b = BlockFromLayout(layout[i], recognised[i]);
    if (b.type == "text") b.merge_prev = layout[i].merge_prev;
    b.absorbed = i < absorbed.size() && absorbed[i];
    blocks.push_back(std::move(b));
  }
  for (size_t i = 0; i < blocks.size(); ++i) {
    ContentBlock& b = blocks[i];
    if (b.type == "table" && HasText(b)) {
      const std::string html = OtslToHtml(*b.content);
      b.content =
          TableFormulaToEq(i < table_tokens.size() ? ReplaceTableImageTokens(html, table_tokens[i]) : html);
    }
    if ((b.type == "image" || b.type == "chart") && HasText(b)) ApplyImageAnalysis(b);
  }
  for (auto& b : blocks) {
    if (b.type == "list_item") {
      b.type = "text";
      b.merge_prev = false;
    }
  }
  const std::vector<bool> keep = KeepAfterNonText(blocks);
  std::vector<ContentBlock> kept;
  for (size_t i = 0; i < blocks.size(); ++i) {
    ContentBlock& b = blocks[i];
    if (!keep[i]) continue;
    if (b.type == "equation" && HasText(b)) {
      b.content = FixEquationV12(*b.content);
    } else if (b.type == "text" && HasText(b)) {
      b.content = TextUnderscoresOutside(TextMacroSpacing(TextDisplayToInline(*b.content)));
    }
    kept.push_back(b);
  }
  if (EquationBlockMergeRaises(kept)) {
    // MinerUClientHelper.post_process catches the error and returns the page's original block list
    // (dropped [Non-Text] blocks and equation_blocks included) with the changes made so far, minus
    // absorbed images; no brackets are added.
    std::vector<ContentBlock> out;
    for (auto& b : blocks) {
      if (!(b.type == "image" && b.absorbed)) out.push_back(std::move(b));
    }
    return out;
  }
  blocks = HandleEquationBlocks(std::move(kept));
  std::vector<ContentBlock> out;
  for (auto& b : blocks) {
    if (b.type == "equation" && HasText(b)) b.content = AddEquationBrackets(*b.content);
    if (b.type == "equation_block" || (b.type == "image" && b.absorbed)) continue;
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace mineru::pipeline
