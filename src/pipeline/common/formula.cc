// pipeline/common/formula.cc — the equation fix chain, brackets and equation_block combination
// (mineru-vl-utils post_process/__init__.py, equation_*.py; see formula.h).
#include "pipeline/common/formula.h"

#include <algorithm>

#include "pipeline/common/py_text.h"

namespace mineru::pipeline {

namespace {

size_t SkipSpaces(std::string_view s, size_t p) {
  while (p < s.size()) {
    const size_t n = py::SpaceLen(s, p);
    if (n == 0) break;
    p += n;
  }
  return p;
}

// Matches `_\s*\{([^{}]|\{[^{}]*\})*\}` at p; returns the end or npos. The alternatives are disjoint on
// their first character and the inner group is deterministic, so regex backtracking cannot find a
// different match than this scan.
size_t MatchSubscript(std::string_view s, size_t p) {
  if (p >= s.size() || s[p] != '_') return std::string_view::npos;
  p = SkipSpaces(s, p + 1);
  if (p >= s.size() || s[p] != '{') return std::string_view::npos;
  ++p;
  while (p < s.size()) {
    if (s[p] == '}') return p + 1;
    if (s[p] == '{') {
      size_t q = p + 1;
      while (q < s.size() && s[q] != '{' && s[q] != '}') ++q;
      if (q >= s.size() || s[q] == '{') return std::string_view::npos;
      p = q + 1;
    } else {
      ++p;
    }
  }
  return std::string_view::npos;
}

// Matches `\\tag\s*\{([^}]*)\}` at p: returns the end (npos if none) and the group span.
size_t MatchTag(std::string_view s, size_t p, size_t& group_start, size_t& group_end) {
  if (s.compare(p, 4, "\\tag") != 0) return std::string_view::npos;
  size_t q = SkipSpaces(s, p + 4);
  if (q >= s.size() || s[q] != '{') return std::string_view::npos;
  group_start = q + 1;
  const size_t close = s.find('}', group_start);
  if (close == std::string_view::npos) return std::string_view::npos;
  group_end = close;
  return close + 1;
}

}  // namespace

std::string FixEquationDoubleSubscript(std::string_view latex) {
  std::string out;
  out.reserve(latex.size());
  for (size_t i = 0; i < latex.size();) {
    if (latex[i] == '_') {
      const size_t first = MatchSubscript(latex, i);
      if (first != std::string_view::npos) {
        const size_t second = MatchSubscript(latex, SkipSpaces(latex, first));
        if (second != std::string_view::npos) {
          i = second;  // both subscripts are deleted
          continue;
        }
      }
    }
    out += latex[i++];
  }
  return out;
}

std::string FixEquationEqqcolon(std::string_view latex) {
  std::string out = py::ReplaceAll(latex, "\\eqqcolon", "=:");
  return py::ReplaceAll(out, "\\coloneqq", ":=");
}

std::string FixEquationLeq(std::string_view latex) { return py::ReplaceAll(latex, "<", "< "); }

std::string FixUnbalancedBraces(std::string_view latex) {
  std::vector<size_t> stack;
  std::vector<bool> unmatched(latex.size(), false);
  for (size_t i = 0; i < latex.size(); ++i) {
    const char c = latex[i];
    if (c != '{' && c != '}') continue;
    size_t backslashes = 0;
    for (size_t j = i; j > 0 && latex[j - 1] == '\\'; --j) ++backslashes;
    if (backslashes % 2 == 1) continue;  // escaped brace
    if (c == '{') {
      stack.push_back(i);
    } else if (!stack.empty()) {
      stack.pop_back();
    } else {
      unmatched[i] = true;
    }
  }
  for (size_t i : stack) unmatched[i] = true;
  std::string out;
  out.reserve(latex.size());
  for (size_t i = 0; i < latex.size(); ++i) {
    if (!unmatched[i]) out += latex[i];
  }
  return out;
}

std::string FixEquation(std::string_view latex) {
  auto lr = MatchEquationLeftRight(latex);
  if (!lr) return std::string(latex);  // the reference's try/except keeps the original content
  std::string s = FixEquationDoubleSubscript(*lr);
  s = FixEquationEqqcolon(s);
  s = FixEquationBig(s);
  s = FixEquationLeq(s);
  return FixUnbalancedBraces(s);
}

std::string FixEquationDelimiters(std::string_view latex) {
  std::string_view s = py::Strip(latex);
  if (py::StartsWith(s, "\\[")) s.remove_prefix(2);
  if (py::EndsWith(s, "\\]")) s.remove_suffix(2);
  return std::string(py::Strip(s));
}

std::string FixEquationV12(std::string_view latex) {
  std::string s = MatchEquationLeftRightV12(FixEquationDelimiters(latex));
  s = FixEquationDoubleSubscript(s);
  s = FixEquationEqqcolon(s);
  s = FixEquationBig(s);
  s = FixEquationLeq(s);
  return FixUnbalancedBraces(s);
}

std::string AddEquationBrackets(std::string_view latex) {
  std::string s(py::Strip(latex));
  if (!py::StartsWith(s, "\\[")) s = "\\[\n" + s;
  if (!py::EndsWith(s, "\\]")) s += "\n\\]";
  return s;
}

std::string CombineEquations(const std::vector<std::string>& contents) {
  size_t total_tags = 0;
  for (const auto& c : contents) {
    size_t gs = 0, ge = 0;
    for (size_t p = 0; p < c.size();) {
      const size_t end = MatchTag(c, p, gs, ge);
      if (end != std::string_view::npos) {
        ++total_tags;
        p = end;
      } else {
        ++p;
      }
    }
  }
  std::string combined = "\\begin{array}{l} ";
  for (const auto& c : contents) {
    std::string piece;
    if (total_tags > 1) {
      for (size_t p = 0; p < c.size();) {
        size_t gs = 0, ge = 0;
        const size_t end = MatchTag(c, p, gs, ge);
        if (end != std::string_view::npos) {
          piece += "(";
          piece.append(c, gs, ge - gs);
          piece += ")";
          p = end;
        } else {
          piece += c[p++];
        }
      }
    } else {
      piece = c;
    }
    combined += piece;
    combined += " \\\\ ";
  }
  combined += "\\end{array}";
  return combined;
}

double BboxCoverRatio(const double a[4], const double b[4]) {
  const double xa = std::max(a[0], b[0]);
  const double ya = std::max(a[1], b[1]);
  const double xb = std::min(a[2], b[2]);
  const double yb = std::min(a[3], b[3]);
  const double inter = std::max(0.0, xb - xa) * std::max(0.0, yb - ya);
  const double area_b = (b[2] - b[0]) * (b[3] - b[1]);
  if (area_b == 0) return 0.0;
  return inter / area_b;
}

}  // namespace mineru::pipeline
