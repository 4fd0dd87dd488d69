// pipeline/extract/vlu_1_2/mermaid_scan.h — the character classes and scans the Mermaid flowchart
// repairs share (mermaid_node_ids.cc, mermaid_invalid_lines.cc, mermaid_arrows.cc,
// mermaid_repetition.cc): `\s` as Python's whitespace, the node-id classes, the line join. Internal to
// those files; not the repairs themselves (post_process.h declares them).
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/common/py_text.h"

namespace mineru::pipeline::mermaid_scan {

inline bool Alnum(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
inline bool IdStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
inline bool IdChar(char c) { return Alnum(c) || c == '_'; }

// [A-Za-z_][A-Za-z0-9_]* over the whole string.
inline bool ValidId(std::string_view s) {
  if (s.empty() || !IdStart(s[0])) return false;
  return std::all_of(s.begin(), s.end(), IdChar);
}

// The lines joined by "\n", with the original's final newline kept.
inline std::string JoinLines(const std::vector<std::string>& lines, std::string_view original) {
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) out += (i ? "\n" : "") + lines[i];
  if (py::EndsWith(original, "\n")) out += '\n';
  return out;
}

// Past `\s*` from i.
inline size_t SkipWs(std::string_view s, size_t i) {
  while (i < s.size()) {
    const size_t n = py::SpaceLen(s, i);
    if (n == 0) break;
    i += n;
  }
  return i;
}

// A code point of the node-id class [a-zA-Z0-9_\u4e00-\u9fa5\-] at i: its byte length, or 0.
inline size_t NodeIdChar(std::string_view s, size_t i) {
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

inline size_t NodeIdRun(std::string_view s, size_t i) {
  size_t j = i;
  while (j < s.size()) {
    const size_t n = NodeIdChar(s, j);
    if (n == 0) break;
    j += n;
  }
  return j;
}

}  // namespace mineru::pipeline::mermaid_scan
