// pipeline/extract/vlu_1_2/mermaid_node_ids.cc — mineru-vl-utils 1.2.1 mermaid_node_id_legalize.py:
// edge endpoints that are not valid Mermaid ids get a sanitised id (declared once with the raw text as
// its label). Not the other flowchart repairs (mermaid_invalid_lines.cc, mermaid_arrows.cc) nor the
// repetition detector (mermaid_repetition.cc). Regexes are re-expressed as scans with the same
// leftmost, backtracking outcome; `\s` is Python's whitespace (py::SpaceLen).
#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/common/py_text.h"
#include "pipeline/extract/vlu_1_2/mermaid_scan.h"
#include "pipeline/extract/vlu_1_2/post_process.h"

namespace mineru::pipeline {

namespace {

using namespace mermaid_scan;  // NOLINT: the shared scans

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

}  // namespace mineru::pipeline
