// pipeline/extract/vlu_1_2/mermaid.cc — the flowchart repairs of mineru-vl-utils 1.2.1
// (mermaid_node_id_legalize.py, mermaid_invalid_edge_lines.py, mermaid_invalid_subgraph_lines.py and the
// arrow/node fixes of extract_and_validate_mermaid_strict). Regexes are re-expressed as scans with the same
// leftmost, backtracking outcome; `\s` is Python's whitespace (py::SpaceLen).
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pipeline/common/py_text.h"
#include "pipeline/extract/vlu_1_2/post_process.h"

namespace mineru::pipeline {

namespace {

bool Alnum(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IdStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IdChar(char c) { return Alnum(c) || c == '_'; }

// [A-Za-z_][A-Za-z0-9_]* over the whole string.
bool ValidId(std::string_view s) {
  if (s.empty() || !IdStart(s[0])) return false;
  return std::all_of(s.begin(), s.end(), IdChar);
}

std::string JoinLines(const std::vector<std::string>& lines, std::string_view original) {
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) out += (i ? "\n" : "") + lines[i];
  if (py::EndsWith(original, "\n")) out += '\n';
  return out;
}

size_t SkipWs(std::string_view s, size_t i) {
  while (i < s.size()) {
    const size_t n = py::SpaceLen(s, i);
    if (n == 0) break;
    i += n;
  }
  return i;
}

// ---- node id legalisation ----

// Splits on top-level `sep_fn` matches outside quotes, brackets and |labels|.
template <typename Sep>
std::vector<std::string> SplitTopLevel(std::string_view s, Sep sep_len) {
  std::vector<std::string> parts;
  size_t start = 0, i = 0;
  bool in_quote = false, escaped = false, in_pipe = false;
  int depth = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (escaped) {
      escaped = false;
    } else if (in_quote) {
      if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_quote = false;
    } else if (c == '"') {
      in_quote = true;
    } else if (c == '[' || c == '(' || c == '{') {
      ++depth;
    } else if (c == ']' || c == ')' || c == '}') {
      if (depth > 0) --depth;
    } else if (c == '|' && depth == 0) {
      in_pipe = !in_pipe;
    } else if (const size_t n = depth == 0 && !in_pipe ? sep_len(s, i) : 0) {
      parts.emplace_back(s.substr(start, i - start));
      start = i + n;
      i += n;
      continue;
    }
    ++i;
  }
  parts.emplace_back(s.substr(start));
  return parts;
}

std::string SanitizeNodeId(std::string_view raw) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < raw.size();) {
    if (!Alnum(raw[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < raw.size() && Alnum(raw[j])) ++j;
    parts.emplace_back(raw.substr(i, j - i));
    i = j;
  }
  std::string cand;
  if (!parts.empty()) {
    cand = parts[0];
    for (size_t k = 1; k < parts.size(); ++k) {  // str.capitalize()
      std::string p = parts[k];
      for (char& c : p) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      p[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(p[0])));
      cand += p;
    }
  } else {
    for (char c : raw) {
      if (IdChar(c)) cand += c;
    }
  }
  if (cand.empty()) cand = "node";
  if (cand[0] >= '0' && cand[0] <= '9') cand = "n" + cand;
  return cand;
}

struct IdState {
  std::set<std::string> declared;
  std::vector<std::pair<std::string, std::string>> map;  // raw -> fixed, insertion order
  const std::string* Find(const std::string& raw) const {
    for (const auto& [k, v] : map) {
      if (k == raw) return &v;
    }
    return nullptr;
  }
  bool IsValue(const std::string& v) const {
    return std::any_of(map.begin(), map.end(), [&](const auto& kv) { return kv.second == v; });
  }
};

std::string ConvertEndpoint(std::string_view token, IdState& st) {
  std::string raw(py::Strip(token));
  if (raw.empty() || raw.find_first_of("[](){}\"|") != std::string::npos) return std::string(token);
  if (ValidId(raw)) return raw;
  std::string fixed;
  if (const std::string* f = st.Find(raw)) {
    fixed = *f;
  } else {
    fixed = SanitizeNodeId(raw);
    const std::string base = fixed;
    for (int idx = 2; st.declared.count(fixed) || st.IsValue(fixed); ++idx)
      fixed = base + std::to_string(idx);
    st.map.emplace_back(raw, fixed);
  }
  if (!st.declared.count(fixed)) {
    st.declared.insert(fixed);
    return fixed + "[\"" + raw + "\"]";
  }
  return fixed;
}

std::string SanitizeEdgeLabel(std::string_view raw) {
  std::string l;
  for (char c : raw) {
    if (c != '(' && c != ')') l += c;
  }
  std::string out;  // re.sub(" {2,}", " ")
  for (size_t i = 0; i < l.size(); ++i) {
    if (l[i] == ' ' && i + 1 < l.size() && l[i + 1] == ' ') {
      while (i + 1 < l.size() && l[i + 1] == ' ') ++i;
    }
    out += l[i];
  }
  return std::string(py::Strip(out));
}

std::string FixTarget(std::string_view segment, IdState& st) {
  const std::string_view s = py::Strip(segment);
  // ^\|(?P<label>.*?)\|\s*(?P<dst>.+?)\s*$ : the first closing '|' that is not the last character.
  if (py::StartsWith(s, "|")) {
    const size_t close = s.find('|', 1);
    if (close != std::string_view::npos && close + 1 < s.size()) {
      const std::string label = SanitizeEdgeLabel(s.substr(1, close - 1));
      const std::string_view dst = py::Strip(s.substr(close + 1));
      return "|" + label + "| " + ConvertEndpoint(dst, st);
    }
  }
  return ConvertEndpoint(s, st);
}

std::string FixEdgeStatement(std::string_view statement, IdState& st) {
  const std::string_view s = py::Strip(statement);
  if (s.find("-->") == std::string_view::npos || py::StartsWith(s, "%%")) return std::string(s);
  const auto chain =
      SplitTopLevel(s, [](std::string_view t, size_t i) { return t.substr(i, 3) == "-->" ? 3u : 0u; });
  if (chain.size() < 2) return std::string(s);
  std::string fixed = ConvertEndpoint(py::Strip(chain[0]), st);
  for (size_t k = 1; k < chain.size(); ++k) {
    const std::string target = FixTarget(chain[k], st);
    fixed += (py::StartsWith(target, "|") ? " -->" : " --> ") + target;
  }
  return fixed;
}

// `<\s*-\s*-\s*>` somewhere in s.
bool HasBidirectional(std::string_view s) {
  for (size_t i = s.find('<'); i != std::string_view::npos; i = s.find('<', i + 1)) {
    size_t p = SkipWs(s, i + 1);
    if (p >= s.size() || s[p] != '-') continue;
    p = SkipWs(s, p + 1);
    if (p >= s.size() || s[p] != '-') continue;
    p = SkipWs(s, p + 1);
    if (p < s.size() && s[p] == '>') return true;
  }
  return false;
}

}  // namespace

std::string MermaidNodeIdLegalize(std::string_view content) {
  const auto lines = py::SplitLines(content);
  IdState st;
  for (std::string_view line : lines) {  // _EXISTING_DECL_RE on the stripped line
    const std::string_view s = py::Strip(line);
    if (s.empty() || !IdStart(s[0])) continue;
    size_t j = 0;
    while (j < s.size() && IdChar(s[j])) ++j;
    const size_t k = SkipWs(s, j);
    if (k < s.size() && (s[k] == '[' || s[k] == '(' || s[k] == '{'))
      st.declared.insert(std::string(s.substr(0, j)));
  }
  std::vector<std::string> out;
  for (std::string_view line : lines) {
    const std::string_view s = py::Strip(line);
    if (HasBidirectional(line) || line.find("-->") == std::string_view::npos || py::StartsWith(s, "%%")) {
      out.emplace_back(line);
      continue;
    }
    auto statements = SplitTopLevel(line, [](std::string_view t, size_t i) { return t[i] == ';' ? 1u : 0u; });
    const bool trailing = statements.size() > 1 && py::IsBlank(statements.back());
    if (trailing) statements.pop_back();
    std::vector<std::string> fixed;
    for (const auto& stmt : statements) {
      if (!py::IsBlank(stmt)) fixed.push_back(FixEdgeStatement(stmt, st));
    }
    if (fixed.empty()) {
      out.emplace_back(line);
      continue;
    }
    std::string nl = "  ";
    for (size_t k = 0; k < fixed.size(); ++k) nl += (k ? "; " : "") + fixed[k];
    if (trailing) nl += ';';
    out.push_back(std::move(nl));
  }
  return JoinLines(out, content);
}

// ---- invalid edge lines ----

namespace {

size_t CountUnquotedPipes(std::string_view line) {
  bool in_single = false, in_double = false, escape = false;
  size_t n = 0;
  for (char c : line) {
    if (escape) {
      escape = false;
    } else if (c == '\\') {
      escape = true;
    } else if (c == '\'' && !in_double) {
      in_single = !in_single;
    } else if (c == '"' && !in_single) {
      in_double = !in_double;
    } else if (c == '|' && !in_single && !in_double) {
      ++n;
    }
  }
  return n;
}

// _VALID_EDGE_LABEL_RE.search: -->\s*\|[^|\n]+\|\s*\S
bool HasValidEdgeLabel(std::string_view line) {
  for (size_t i = line.find("-->"); i != std::string_view::npos; i = line.find("-->", i + 1)) {
    size_t p = SkipWs(line, i + 3);
    if (p >= line.size() || line[p] != '|') continue;
    const size_t close = line.find('|', p + 1);
    if (close == std::string_view::npos || close == p + 1) continue;
    if (line.substr(p + 1, close - p - 1).find('\n') != std::string_view::npos) continue;
    if (SkipWs(line, close + 1) < line.size()) return true;
  }
  return false;
}

// _SUSPECT_SINGLE_PIPE_RE.search: -->\s*[^|\n]*\|\s*[^|\n]+$
bool SuspectSinglePipe(std::string_view s) {
  for (size_t i = s.find("-->"); i != std::string_view::npos; i = s.find("-->", i + 1)) {
    const size_t bar = s.find('|', i + 3);
    if (bar == std::string_view::npos || bar + 1 >= s.size()) continue;
    if (s.substr(bar + 1).find('|') != std::string_view::npos) continue;
    if (s.substr(i + 3).find('\n') != std::string_view::npos) continue;
    return true;
  }
  return false;
}

bool InvalidSinglePipeEdge(std::string_view line) {
  const std::string_view s = py::Strip(line);
  if (s.empty() || py::StartsWith(s, "%%")) return false;
  if (line.find("-->") == std::string_view::npos || line.find('|') == std::string_view::npos) return false;
  if (HasValidEdgeLabel(line)) return false;
  return CountUnquotedPipes(line) == 1 && SuspectSinglePipe(s);
}

std::string SanitizeSubgraphId(std::string_view raw) {
  std::string sid;
  for (size_t i = 0; i < raw.size();) {  // [^A-Za-z0-9_]+ -> "_", then _+ -> "_"
    if (IdChar(raw[i])) {
      if (raw[i] == '_' && !sid.empty() && sid.back() == '_') {
        ++i;
        continue;
      }
      sid += raw[i++];
      continue;
    }
    while (i < raw.size() && !IdChar(raw[i])) ++i;
    if (sid.empty() || sid.back() != '_') sid += '_';
  }
  const size_t b = sid.find_first_not_of('_');
  sid = b == std::string::npos ? std::string() : sid.substr(b, sid.find_last_not_of('_') - b + 1);
  if (sid.empty()) sid = "sg";
  if (sid[0] >= '0' && sid[0] <= '9') sid = "sg_" + sid;
  return sid;
}

// _EXPLICIT_SUBGRAPH_ID_RE.match(body.strip()): an id followed by optional whitespace and '[' or '('.
std::string ExplicitSubgraphId(std::string_view body) {
  const std::string_view s = py::Strip(body);
  if (s.empty() || !IdStart(s[0])) return "";
  size_t j = 0;
  while (j < s.size() && IdChar(s[j])) ++j;
  const size_t k = SkipWs(s, j);
  return k < s.size() && (s[k] == '[' || s[k] == '(') ? std::string(s.substr(0, j)) : "";
}

}  // namespace

std::string MermaidInvalidEdgeLines(std::string_view content) {
  std::vector<std::string> kept;
  for (std::string_view line : py::SplitLines(content)) {
    if (!InvalidSinglePipeEdge(line)) kept.emplace_back(line);
  }
  return JoinLines(kept, content);
}

std::string MermaidInvalidSubgraphLines(std::string_view content) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (std::string_view line : py::SplitLines(content)) {
    // ^(\s*)subgraph\s+(.+?)\s*$
    const size_t ind = SkipWs(line, 0);
    const size_t ws = ind + 8;
    const size_t body_at = SkipWs(line, ws);
    const std::string_view body = py::RStrip(line.substr(std::min(body_at, line.size())));
    if (line.substr(ind, 8) != "subgraph" || body_at == ws || body.empty()) {
      out.emplace_back(line);
      continue;
    }
    if (const std::string id = ExplicitSubgraphId(body); !id.empty()) {
      seen.insert(id);
      out.emplace_back(line);
      continue;
    }
    size_t first_end = 0;
    while (first_end < body.size() && py::SpaceLen(body, first_end) == 0) ++first_end;
    const std::string first(body.substr(0, first_end));
    if (ValidId(first)) {
      seen.insert(first);
      out.emplace_back(line);
      continue;
    }
    const std::string base = SanitizeSubgraphId(body);
    std::string sid = base;
    for (int idx = 2; seen.count(sid); ++idx) sid = base + "_" + std::to_string(idx);
    seen.insert(sid);
    out.push_back(std::string(line.substr(0, ind)) + "subgraph " + sid + "[\"" +
                  py::ReplaceAll(body, "\"", "\\\"") + "\"]");
  }
  return JoinLines(out, content);
}

// ---- arrow and node fixes of extract_and_validate_mermaid_strict ----

namespace {

// Replaces each leftmost non-overlapping match found by `match(s, i) -> end or npos` with `to`.
template <typename M>
std::string SubScan(std::string_view s, std::string_view to, M match) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    const size_t end = match(s, i);
    if (end != std::string_view::npos) {
      out += to;
      i = end;
    } else {
      out += s[i++];
    }
  }
  return out;
}

// A code point of the node-id class [a-zA-Z0-9_\u4e00-\u9fa5\-] at i: its byte length, or 0.
size_t NodeIdChar(std::string_view s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  if (Alnum(s[i]) || c == '_' || c == '-') return 1;
  if (c >= 0xE4 && c <= 0xE9 && i + 2 < s.size()) {
    const unsigned cp = ((c & 0x0Fu) << 12) | ((static_cast<unsigned char>(s[i + 1]) & 0x3Fu) << 6) |
                        (static_cast<unsigned char>(s[i + 2]) & 0x3Fu);
    const bool cont = (static_cast<unsigned char>(s[i + 1]) & 0xC0) == 0x80 &&
                      (static_cast<unsigned char>(s[i + 2]) & 0xC0) == 0x80;
    if (cont && cp >= 0x4E00 && cp <= 0x9FA5) return 3;
  }
  return 0;
}

size_t NodeIdRun(std::string_view s, size_t i) {
  size_t j = i;
  while (j < s.size()) {
    const size_t n = NodeIdChar(s, j);
    if (n == 0) break;
    j += n;
  }
  return j;
}

size_t SkipTabs(std::string_view s, size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return i;
}

std::string FixNode(std::string_view whole, std::string_view raw_id, std::string_view raw_text) {
  std::string lower(raw_id);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (py::StartsWith(lower, "subgraph ")) return std::string(whole);
  std::string id;
  for (size_t i = 0; i < raw_id.size();) {  // [ \t]+ -> _
    if (raw_id[i] == ' ' || raw_id[i] == '\t') {
      i = SkipTabs(raw_id, i);
      id += '_';
    } else {
      id += raw_id[i++];
    }
  }
  if (py::StartsWith(raw_text, "\"[")) return std::string(whole);
  if (raw_text.empty()) return id + "[]";
  if (py::StartsWith(raw_text, "\"") && py::EndsWith(raw_text, "\"")) {
    raw_text = raw_text.size() >= 2 ? raw_text.substr(1, raw_text.size() - 2) : std::string_view();
  }
  const std::string safe = py::ReplaceAll(py::ReplaceAll(raw_text, "\"", "&quot;"), "\n", "<br>");
  return id + "[\"" + safe + "\"]";
}

std::string FixNodes(std::string_view s) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    size_t n = NodeIdChar(s, i);
    if (n) {
      // The maximal id sequence (runs joined by [ \t]+), then [ \t]*\[ and the first ']' after it.
      size_t end = NodeIdRun(s, i);
      while (true) {
        const size_t t = SkipTabs(s, end);
        if (t == end || t >= s.size() || !NodeIdChar(s, t)) break;
        end = NodeIdRun(s, t);
      }
      const size_t br = SkipTabs(s, end);
      const size_t close = br < s.size() && s[br] == '[' ? s.find(']', br + 1) : std::string_view::npos;
      if (close != std::string_view::npos) {
        out += FixNode(s.substr(i, close + 1 - i), s.substr(i, end - i), s.substr(br + 1, close - br - 1));
        i = close + 1;
        continue;
      }
    } else {
      n = 1;
      while (i + n < s.size() && (static_cast<unsigned char>(s[i + n]) & 0xC0) == 0x80) ++n;
    }
    out.append(s.substr(i, n));
    i += n;
  }
  return out;
}

}  // namespace

std::string MermaidFixArrowsAndNodes(std::string_view code_in) {
  const std::string token = "__MERMAID_BIDIR_ARROW__";
  auto ws_from = [](std::string_view s, size_t i) { return SkipWs(s, i); };
  // <\s*-\s*-\s*>
  std::string code = SubScan(code_in, token, [&](std::string_view s, size_t i) -> size_t {
    if (s[i] != '<') return std::string_view::npos;
    size_t p = ws_from(s, i + 1);
    if (p >= s.size() || s[p] != '-') return std::string_view::npos;
    p = ws_from(s, p + 1);
    if (p >= s.size() || s[p] != '-') return std::string_view::npos;
    p = ws_from(s, p + 1);
    return p < s.size() && s[p] == '>' ? p + 1 : std::string_view::npos;
  });
  // -\s+->   then   --\s+>   then   -\s+-\s+>
  code = SubScan(code, "-->", [&](std::string_view s, size_t i) -> size_t {
    if (s[i] != '-') return std::string_view::npos;
    const size_t p = ws_from(s, i + 1);
    return p > i + 1 && s.substr(p, 2) == "->" ? p + 2 : std::string_view::npos;
  });
  code = SubScan(code, "-->", [&](std::string_view s, size_t i) -> size_t {
    if (s.substr(i, 2) != "--") return std::string_view::npos;
    const size_t p = ws_from(s, i + 2);
    return p > i + 2 && p < s.size() && s[p] == '>' ? p + 1 : std::string_view::npos;
  });
  code = SubScan(code, "-->", [&](std::string_view s, size_t i) -> size_t {
    if (s[i] != '-') return std::string_view::npos;
    size_t p = ws_from(s, i + 1);
    if (p == i + 1 || p >= s.size() || s[p] != '-') return std::string_view::npos;
    const size_t q = ws_from(s, p + 1);
    return q > p + 1 && q < s.size() && s[q] == '>' ? q + 1 : std::string_view::npos;
  });
  // (?<![-=])\s+->\s+
  code = SubScan(code, " --> ", [&](std::string_view s, size_t i) -> size_t {
    if (py::SpaceLen(s, i) == 0 || (i > 0 && (s[i - 1] == '-' || s[i - 1] == '=')))
      return std::string_view::npos;
    const size_t p = ws_from(s, i);
    if (s.substr(p, 2) != "->") return std::string_view::npos;
    const size_t q = ws_from(s, p + 2);
    return q > p + 2 ? q : std::string_view::npos;
  });
  code = py::ReplaceAll(code, token, "<-->");
  return FixNodes(code);
}

}  // namespace mineru::pipeline

// ---- repetition detector (mermaid_repetition.detect_mermaid_repetition_issues is non-empty) ----

namespace mineru::pipeline {

namespace {

size_t CodePoints(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// _normalize_escaped_newlines: `\\+n` -> "\n", then <br>, <br/>, <br /> (any case) -> "\n".
std::string NormalizeEscapedNewlines(std::string_view s) {
  std::string a;
  for (size_t i = 0; i < s.size();) {
    if (s[i] == '\\') {
      size_t j = i;
      while (j < s.size() && s[j] == '\\') ++j;
      if (j < s.size() && s[j] == 'n') {
        a += '\n';
        i = j + 1;
        continue;
      }
      a.append(s.substr(i, j - i));
      i = j;
      continue;
    }
    a += s[i++];
  }
  std::string out;
  for (size_t i = 0; i < a.size();) {
    if (a[i] == '<' && i + 2 < a.size() && (a[i + 1] == 'b' || a[i + 1] == 'B') &&
        (a[i + 2] == 'r' || a[i + 2] == 'R')) {
      size_t p = SkipWs(a, i + 3);
      if (p < a.size() && a[p] == '/') ++p;
      if (p < a.size() && a[p] == '>') {
        out += '\n';
        i = p + 1;
        continue;
      }
    }
    out += a[i++];
  }
  return out;
}

// _detect_node_id_issues: oversized, or a 2-letter token repeated 8 times.
bool NodeIdRepeats(std::string_view id) {
  if (id.empty()) return false;
  if (CodePoints(id) > 128) return true;
  auto upper = [](char c) { return c >= 'A' && c <= 'Z'; };
  auto lower = [](char c) { return c >= 'a' && c <= 'z'; };
  std::map<std::string, int> freq;
  for (size_t i = 0; i + 1 < id.size();) {  // [A-Z][a-z]|[A-Z]{2}
    if (upper(id[i]) && (lower(id[i + 1]) || upper(id[i + 1]))) {
      ++freq[std::string(id.substr(i, 2))];
      i += 2;
    } else {
      ++i;
    }
  }
  if (freq.empty()) {  // sliding pairs over [A-Za-z]{8,} runs
    for (size_t i = 0; i < id.size();) {
      size_t j = i;
      while (j < id.size() && (upper(id[j]) || lower(id[j]))) ++j;
      if (j - i >= 8) {
        for (size_t k = i; k + 1 < j; ++k) ++freq[std::string(id.substr(k, 2))];
      }
      i = j > i ? j : i + 1;
    }
  }
  for (const auto& [tok, n] : freq) {
    if (n >= 8) return true;
  }
  return false;
}

// Char boundaries inside [from, to) of a node-id run, longest first (for a backtracking prefix).
std::vector<size_t> RunPrefixEnds(std::string_view s, size_t from, size_t to) {
  std::vector<size_t> ends;
  for (size_t i = from; i < to;) {
    i += NodeIdChar(s, i);
    ends.push_back(i);
  }
  std::reverse(ends.begin(), ends.end());
  return ends;
}

struct Edge {
  std::string src, dst;
};

// _EDGE_LINE_RE.match:
// ^\s*(src)\s*-->\s*(?:\|[^|\n]*\|\s*)?(dst)(?:\s*(?:\[[^\]]*\]|\([^\)]*\)|\{[^\}]*\}))?\s*$
std::optional<Edge> MatchEdgeLine(std::string_view line) {
  const size_t p = SkipWs(line, 0);
  const size_t run = NodeIdRun(line, p);
  for (size_t src_end : RunPrefixEnds(line, p, run)) {
    const size_t q = SkipWs(line, src_end);
    if (line.substr(q, 3) != "-->") continue;
    size_t r = SkipWs(line, q + 3);
    if (r < line.size() && line[r] == '|') {
      const size_t close = line.find('|', r + 1);
      if (close == std::string_view::npos || line.substr(r, close - r).find('\n') != std::string_view::npos)
        continue;
      r = SkipWs(line, close + 1);
    }
    const size_t dst_end = NodeIdRun(line, r);
    if (dst_end == r) continue;
    size_t t = SkipWs(line, dst_end);
    if (t < line.size()) {
      const char open = line[t];
      const char close_ch = open == '[' ? ']' : open == '(' ? ')' : open == '{' ? '}' : 0;
      if (!close_ch) continue;
      const size_t c = line.find(close_ch, t + 1);
      if (c == std::string_view::npos) continue;
      if (SkipWs(line, c + 1) != line.size()) continue;
    }
    return Edge{std::string(line.substr(p, src_end - p)), std::string(line.substr(r, dst_end - r))};
  }
  return std::nullopt;
}

// _EDGE_LABELED_RE.match: ^\s*(src)\s*-->\s*(dst)\s*\["(label: [^"\\]|\\\\.)*"\]\s*$ ; the label.
std::optional<std::string> MatchLabeledEdge(std::string_view line) {
  const size_t p = SkipWs(line, 0);
  const size_t run = NodeIdRun(line, p);
  for (size_t src_end : RunPrefixEnds(line, p, run)) {
    const size_t q = SkipWs(line, src_end);
    if (line.substr(q, 3) != "-->") continue;
    const size_t r = SkipWs(line, q + 3);
    const size_t dst_end = NodeIdRun(line, r);
    if (dst_end == r) continue;
    const size_t t = SkipWs(line, dst_end);
    if (line.substr(t, 2) != "[\"") continue;
    size_t k = t + 2;
    while (k < line.size() && line[k] != '"') {
      if (line[k] == '\\') {
        if (k + 2 < line.size() && line[k + 1] == '\\' && line[k + 2] != '\n') {
          k += 3;
          continue;
        }
        break;
      }
      ++k;
    }
    if (line.substr(k, 2) != "\"]" || SkipWs(line, k + 2) != line.size()) continue;
    return std::string(line.substr(t + 2, k - t - 2));
  }
  return std::nullopt;
}

bool MaxRunOrCount(const std::vector<std::string>& lines, int run_min, int count_min) {
  std::map<std::string, int> freq;
  int run = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    run = (i > 0 && lines[i] == lines[i - 1]) ? run + 1 : 1;
    if (run >= run_min || ++freq[lines[i]] >= count_min) return true;
  }
  return false;
}

// _NODE_LABEL_RE.finditer over the content: node ids and their "..." labels.
bool LabelsRepeat(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const size_t run = NodeIdRun(s, i);
    if (run == i) {
      ++i;
      continue;
    }
    const size_t t = SkipWs(s, run);
    bool matched = false;
    if (s.substr(t, 2) == "[\"") {
      size_t k = t + 2;
      while (k < s.size() && s[k] != '"')
        k += (s[k] == '\\' && k + 1 < s.size()) ? 2 : (s[k] == '\\' ? s.size() : 1);
      if (k < s.size() && s.substr(k, 2) == "\"]") {
        matched = true;
        if (NodeIdRepeats(s.substr(i, run - i))) return true;
        const std::string label = NormalizeEscapedNewlines(s.substr(t + 2, k - t - 2));
        std::vector<std::string> lines;
        for (std::string_view l : py::SplitLines(label)) {
          if (!py::IsBlank(l)) lines.emplace_back(py::Strip(l));
        }
        if (!lines.empty()) {
          if (MaxRunOrCount(lines, 8, 20)) return true;
          const std::set<std::string> uniq(lines.begin(), lines.end());
          if (CodePoints(label) >= 2000 && static_cast<double>(uniq.size()) / lines.size() <= 0.2)
            return true;
        }
        i = k + 2;
      }
    }
    if (!matched) i = run;
  }
  return false;
}

bool IsStructureLine(std::string_view line) {
  const std::string_view s = py::Strip(line);
  if (s.empty()) return true;
  std::string l(s);
  for (char& c : l) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return py::StartsWith(l, "graph ") || py::StartsWith(l, "flowchart ") || py::StartsWith(l, "subgraph ") ||
         l == "end" || py::StartsWith(l, "direction ") || py::StartsWith(l, "%%") ||
         s.find("-->") != std::string_view::npos;
}

// _normalize_free_text_line
std::string FreeTextLine(std::string_view line) {
  std::string_view s = py::Strip(line);
  auto lead = [&](size_t i) -> size_t {
    const char c = s[i];
    if (c == '[' || c == ']' || c == '(' || c == ')' || c == '"' || c == '\'' || c == '>') return 1;
    return py::SpaceLen(s, i);
  };
  while (!s.empty()) {
    const size_t n = lead(0);
    if (!n) break;
    s.remove_prefix(n);
  }
  while (!s.empty()) {
    const char c = s.back();
    if (c == '[' || c == ']' || c == '(' || c == ')' || c == '"' || c == '\'' || c == ',' || c == '.' ||
        c == ';' || c == ':') {
      s.remove_suffix(1);
    } else if (const size_t n = py::SpaceLenBefore(s, s.size())) {
      s.remove_suffix(n);
    } else {
      break;
    }
  }
  std::string out;
  for (size_t i = 0; i < s.size();) {
    if (const size_t n = py::SpaceLen(s, i)) {
      i = SkipWs(s, i);
      out += ' ';
    } else {
      out += s[i++];
    }
  }
  return std::string(py::Strip(out));
}

}  // namespace

bool MermaidHasRepetition(std::string_view content) {
  if (LabelsRepeat(content)) return true;
  const std::string norm = NormalizeEscapedNewlines(content);
  const auto lines = py::SplitLines(norm);
  std::map<std::string, int> edges, labels;
  std::vector<std::string> free;
  for (std::string_view line : lines) {
    const std::string_view s = py::Strip(line);
    if (auto e = MatchEdgeLine(line)) {
      if (++edges[e->src + "-->" + e->dst] >= 8) return true;
    }
    if (s.find("-->") != std::string_view::npos) {
      if (py::Count(s, "-->") >= 2) {
        size_t start = 0;
        while (true) {  // _extract_edge_endpoint_id of each "-->" segment
          const size_t a = s.find("-->", start);
          std::string_view seg =
              py::Strip(s.substr(start, a == std::string_view::npos ? std::string_view::npos : a - start));
          if (py::StartsWith(seg, "|")) {
            const size_t c = seg.find('|', 1);
            if (c != std::string_view::npos && seg.substr(0, c).find('\n') == std::string_view::npos) {
              seg = seg.substr(SkipWs(seg, c + 1));
            }
          }
          if (NodeIdRepeats(seg.substr(0, NodeIdRun(seg, 0)))) return true;
          if (a == std::string_view::npos) break;
          start = a + 3;
        }
      } else if (auto e = MatchEdgeLine(line)) {
        if (NodeIdRepeats(e->src) || NodeIdRepeats(e->dst)) return true;
      }
    }
    if (auto label = MatchLabeledEdge(line)) {
      const std::string l(py::Strip(*label));
      if (!l.empty() && ++labels[l] >= 8) return true;
    }
    if (!IsStructureLine(line)) {
      std::string c = FreeTextLine(line);
      if (!c.empty()) free.push_back(std::move(c));
    }
  }
  return MaxRunOrCount(free, 8, 20);
}

}  // namespace mineru::pipeline
