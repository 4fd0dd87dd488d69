// pipeline/extract/vlu_1_2/mermaid_arrows.cc — the arrow and node fixes of mineru-vl-utils 1.2.1
// extract_and_validate_mermaid_strict: spaced or broken arrows become "-->" (a bidirectional "<-->"
// kept), node texts become quoted labels. Not the fence extraction and header spelling
// (post_process.cc's MermaidStrict) nor the other flowchart repairs (mermaid_node_ids.cc,
// mermaid_invalid_lines.cc, mermaid_repetition.cc).
#include <cctype>
#include <string>

#include "pipeline/common/py_text.h"
#include "pipeline/extract/vlu_1_2/mermaid_scan.h"
#include "pipeline/extract/vlu_1_2/post_process.h"

namespace mineru::pipeline {

namespace {

using namespace mermaid_scan;  // NOLINT: the shared scans

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
