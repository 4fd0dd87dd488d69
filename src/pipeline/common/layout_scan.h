// pipeline/common/layout_scan.h — the token scanners both layout parsers (layout.cc: mineru-vl-utils
// 0.1.17; extract/vlu_1_2/layout.cc: 1.2.1) build their regex equivalents from. Internal to the pipeline.
#pragma once

#include <string_view>

#include "pipeline/common/py_text.h"

namespace mineru::pipeline::layout_scan {

inline constexpr std::string_view kBoxStart = "<|box_start|>";
inline constexpr std::string_view kBoxEnd = "<|box_end|>";
inline constexpr std::string_view kRefStart = "<|ref_start|>";
inline constexpr std::string_view kRefEnd = "<|ref_end|>";

// Python's `\w` on str matches Unicode letters, digits and '_'. For ASCII we are exact; every
// non-ASCII byte is accepted as part of a word character. That only widens what the regex matches to
// lines whose type then fails the known-type check, so the outcome (line skipped) is the same.
inline bool IsWordByte(unsigned char c) {
  return c >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

// Reads `\d+` at pos (ASCII digits; the model only emits those). Returns false if no digit.
// The value saturates far above 1000 so huge numbers still count as out of range.
inline bool ReadNumber(std::string_view s, size_t& pos, long long& value) {
  const size_t start = pos;
  value = 0;
  while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
    if (value < 1000000) value = value * 10 + (s[pos] - '0');
    ++pos;
  }
  return pos > start;
}

// Reads `\s+` at pos (Python's whitespace, py::SpaceLen).
inline bool ReadSpaces(std::string_view s, size_t& pos) {
  const size_t start = pos;
  while (pos < s.size()) {
    const size_t n = py::SpaceLen(s, pos);
    if (n == 0) break;
    pos += n;
  }
  return pos > start;
}

}  // namespace mineru::pipeline::layout_scan
