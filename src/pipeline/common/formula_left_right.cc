// pipeline/common/formula_left_right.cc — try_match_equation_left_right of mineru-vl-utils
// (post_process/equation_left_right.py), re-expressed step by step:
//   1. If the regex counts of \left.. and \right.. tokens agree, or the counts of "\begin{array}" and
//      "\end{array}" differ, return the input.
//   2. Split the stripped formula on "&", "\\", "\begin{array}{cols}" and "\end{array}" (kept as
//      nodes), strip every non-empty piece (whitespace-only pieces become "" and stay).
//   3. Number the arrays (the stack pop re-assigns the running counter, so numbers can repeat), give
//      every node a (array, cell) tag from the innermost-first ordering, or "none" outside arrays; with
//      no array at all only the first node is tagged.
//   4. For every tag whose nodes have unequal counts, split those nodes on \left/\right tokens
//      (dropping whitespace-only pieces), pair tokens with a stack and close the leftovers with
//      " \right." / "\left. ".
//   5. Join all nodes with no separator.
#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "pipeline/common/formula.h"
#include "pipeline/common/py_text.h"

namespace mineru::pipeline {

namespace {

// Alternatives of LEFT_TOKEN_LIST (each after the literal "\left"), in regex order.
constexpr std::array<std::string_view, 18> kLeftSuffixes = {
    "\\lbrace", "\\lVert", "\\lvert", "\\rvert", "\\rVert", "\\vert", "\\Vert", "\\lfloor", "\\lbrack",
    "\\langle", "|",       "\\|",     "[",       "]",       "(",      "\\{",    "\\}",      ".",
};
// Alternatives of RIGHT_TOKEN_LIST (after "\right"); the last reference alternative is `\\right.`
// with an unescaped dot, i.e. any character but '\n' (handled in MatchRightAt).
constexpr std::array<std::string_view, 17> kRightSuffixes = {
    "\\rbrace", "\\lVert", "\\lvert", "\\rvert", "\\rVert", "\\vert", "\\Vert", "\\rfloor", "\\rbrack",
    "\\rangle", "|",       "\\|",     "]",       "[",       ")",      "\\}",    "\\{",
};

constexpr std::array<std::string_view, 20> kValidLeft = {
    "\\left\\lbrace", "\\left\\lVert", "\\left\\lvert",  "\\left\\rvert",  "\\left\\rVert",
    "\\left\\vert",   "\\left\\Vert",  "\\left\\lfloor", "\\left\\lbrack", "\\left\\langle",
    "\\left|",        "\\left\\|",     "\\left[",        "\\left]",        "\\left(",
    "\\left)",        "\\left\\{",     "\\left\\}",      "\\left.",        "\\left/",
};
constexpr std::array<std::string_view, 20> kValidRight = {
    "\\right\\rbrace", "\\right\\lVert", "\\right\\lvert",  "\\right\\rvert",  "\\right\\rVert",
    "\\right\\vert",   "\\right\\Vert",  "\\right\\rfloor", "\\right\\rbrack", "\\right\\rangle",
    "\\right|",        "\\right\\|",     "\\right]",        "\\right[",        "\\right)",
    "\\right(",        "\\right\\}",     "\\right\\{",      "\\right.",        "\\right/",
};
// is_pair_left_right: the pairs, each also matching "\left." on the left or "\right." on the right.
constexpr std::array<std::pair<std::string_view, std::string_view>, 17> kPairs = {{
    {"\\left\\lbrace", "\\right\\rbrace"},
    {"\\left\\lVert", "\\right\\lVert"},
    {"\\left\\lvert", "\\right\\lvert"},
    {"\\left\\vert", "\\right\\vert"},
    {"\\left\\Vert", "\\right\\Vert"},
    {"\\left\\lfloor", "\\right\\rfloor"},
    {"\\left\\lbrack", "\\right\\rbrack"},
    {"\\left\\langle", "\\right\\rangle"},
    {"\\left|", "\\right|"},
    {"\\left\\|", "\\right\\|"},
    {"\\left[", "\\right]"},
    {"\\left]", "\\right["},
    {"\\left(", "\\right)"},
    {"\\left)", "\\right("},
    {"\\left\\{", "\\right\\}"},
    {"\\left\\}", "\\right\\{"},
    {"\\left/", "\\right/"},
}};

template <size_t N>
bool Contains(const std::array<std::string_view, N>& list, std::string_view s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

// Length of a LEFT_TOKEN_LIST match at pos, 0 if none.
size_t MatchLeftAt(std::string_view s, size_t pos) {
  if (s.compare(pos, 5, "\\left") != 0) return 0;
  const std::string_view rest = s.substr(pos + 5);
  for (auto suf : kLeftSuffixes) {
    if (py::StartsWith(rest, suf)) return 5 + suf.size();
  }
  return 0;
}

// Length of a RIGHT_TOKEN_LIST match at pos, 0 if none.
size_t MatchRightAt(std::string_view s, size_t pos) {
  if (s.compare(pos, 6, "\\right") != 0) return 0;
  const std::string_view rest = s.substr(pos + 6);
  for (auto suf : kRightSuffixes) {
    if (py::StartsWith(rest, suf)) return 6 + suf.size();
  }
  // `\\right.`: any one character except '\n' (a whole UTF-8 character).
  if (rest.empty() || rest[0] == '\n') return 0;
  size_t len = 1;
  const auto c = static_cast<unsigned char>(rest[0]);
  if (c >= 0xF0) {
    len = 4;
  } else if (c >= 0xE0) {
    len = 3;
  } else if (c >= 0xC0) {
    len = 2;
  }
  return 6 + std::min(len, rest.size());
}

size_t CountMatches(std::string_view s, size_t (*match)(std::string_view, size_t)) {
  size_t n = 0;
  for (size_t pos = 0; pos < s.size();) {
    const size_t len = match(s, pos);
    if (len > 0) {
      ++n;
      pos += len;
    } else {
      ++pos;
    }
  }
  return n;
}

size_t CountLeft(std::string_view s) { return CountMatches(s, MatchLeftAt); }
size_t CountRight(std::string_view s) { return CountMatches(s, MatchRightAt); }

// re.split("(" + LEFT|RIGHT + ")") keeping pieces whose strip() is non-empty.
std::vector<std::string> SplitWithLeftRight(std::string_view s) {
  std::vector<std::string> pieces;
  auto keep = [&](std::string_view p) {
    if (!py::IsBlank(p)) pieces.emplace_back(p);
  };
  size_t piece_start = 0;
  for (size_t pos = 0; pos < s.size();) {
    size_t len = MatchLeftAt(s, pos);
    if (len == 0) len = MatchRightAt(s, pos);
    if (len == 0) {
      ++pos;
      continue;
    }
    keep(s.substr(piece_start, pos - piece_start));
    keep(s.substr(pos, len));
    pos += len;
    piece_start = pos;
  }
  keep(s.substr(piece_start));
  return pieces;
}

// Length of a split_with_delimiters match at pos:
//   \&  |  \\\\  |  \\begin{array}\s*{[a-zA-Z\s]*}  |  \\end{array}
size_t MatchDelimiterAt(std::string_view s, size_t pos) {
  if (s[pos] == '&') return 1;
  if (s.compare(pos, 2, "\\\\") == 0) return 2;
  constexpr std::string_view kBegin = "\\begin{array}";
  if (s.compare(pos, kBegin.size(), kBegin) == 0) {
    size_t p = pos + kBegin.size();
    while (p < s.size()) {
      const size_t n = py::SpaceLen(s, p);
      if (n == 0) break;
      p += n;
    }
    if (p < s.size() && s[p] == '{') {
      ++p;
      while (p < s.size()) {
        const char c = s[p];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
          ++p;
          continue;
        }
        const size_t n = py::SpaceLen(s, p);
        if (n == 0) break;
        p += n;
      }
      if (p < s.size() && s[p] == '}') return p + 1 - pos;
    }
  }
  constexpr std::string_view kEnd = "\\end{array}";
  if (s.compare(pos, kEnd.size(), kEnd) == 0) return kEnd.size();
  return 0;
}

// re.split with the capturing delimiter pattern, then [node.strip() for node in nodes if len(node) > 0].
std::vector<std::string> SplitNodes(std::string_view s) {
  std::vector<std::string> raw;
  size_t piece_start = 0;
  for (size_t pos = 0; pos < s.size();) {
    const size_t len = MatchDelimiterAt(s, pos);
    if (len == 0) {
      ++pos;
      continue;
    }
    raw.emplace_back(s.substr(piece_start, pos - piece_start));
    raw.emplace_back(s.substr(pos, len));
    pos += len;
    piece_start = pos;
  }
  raw.emplace_back(s.substr(piece_start));
  std::vector<std::string> nodes;
  for (const auto& r : raw) {
    if (!r.empty()) nodes.emplace_back(py::Strip(r));
  }
  return nodes;
}

struct ArrayInfo {
  int tag = 0;
  int start = 0, end = 0;
  std::vector<int> contain;  // tags of arrays strictly inside this one
};

// tag_array. Returns false where 0.1.x raises (pop from an empty stack) and, with `v12`, also where
// 1.2.1 gives up on an array left open.
bool TagArrays(const std::vector<std::string>& nodes, std::vector<ArrayInfo>& arrays, bool v12) {
  std::vector<std::pair<int, int>> stack;  // (tag, start index)
  int array_tag = 0;
  for (size_t idx = 0; idx < nodes.size(); ++idx) {
    if (nodes[idx].find("\\begin{array}") != std::string::npos) {
      ++array_tag;
      stack.emplace_back(array_tag, static_cast<int>(idx));
    } else if (nodes[idx] == "\\end{array}") {
      if (stack.empty()) return false;
      const auto [tag, start] = stack.back();
      stack.pop_back();
      array_tag = tag;  // the reference unpacks the popped entry into the running counter
      arrays.push_back(ArrayInfo{tag, start, static_cast<int>(idx), {}});
    }
  }
  if (v12 && !stack.empty()) return false;
  for (size_t a = 0; a < arrays.size(); ++a) {
    for (size_t b = 0; b < arrays.size(); ++b) {
      if (a == b) continue;
      if (arrays[a].start < arrays[b].start && arrays[a].end > arrays[b].end)
        arrays[a].contain.push_back(arrays[b].tag);
    }
  }
  return true;
}

using NodeTag = std::optional<std::pair<int, int>>;  // (array tag, element index); nullopt = None

// tag_element (arrays already sorted by number of contained arrays, descending, stable).
std::vector<NodeTag> TagElements(const std::vector<std::string>& nodes,
                                 const std::vector<ArrayInfo>& arrays) {
  if (arrays.empty()) return {std::nullopt};
  std::map<int, const ArrayInfo*> tag2arr;
  for (const auto& a : arrays) tag2arr[a.tag] = &a;  // later entries win, like a dict comprehension
  std::vector<std::vector<NodeTag>> all;
  for (const auto& arr : arrays) {
    std::vector<bool> masked(nodes.size(), false);
    for (int t : arr.contain) {
      const ArrayInfo* inner = tag2arr[t];
      for (int idx = inner->start; idx <= inner->end; ++idx) masked[idx] = true;
    }
    for (int idx = 0; idx < static_cast<int>(nodes.size()); ++idx) {
      if (idx < arr.start || idx > arr.end) masked[idx] = true;
    }
    std::vector<NodeTag> tags(nodes.size());
    int element_idx = 0;
    for (size_t idx = 0; idx < nodes.size(); ++idx) {
      if (masked[idx]) continue;
      if (nodes[idx] == "&" || nodes[idx] == "\\\\") {
        ++element_idx;
      } else {
        tags[idx] = std::make_pair(arr.tag, element_idx);
      }
    }
    all.push_back(std::move(tags));
  }
  std::vector<NodeTag> out(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const auto& tags : all) {
      if (tags[i]) {
        out[i] = tags[i];
        break;
      }
    }
  }
  return out;
}

bool IsPair(std::string_view l, std::string_view r) {
  for (const auto& [pl, pr] : kPairs) {
    if ((l == pl || l == "\\left.") && (r == pr || r == "\\right.")) return true;
  }
  return false;
}

bool IsStructural(const std::string& node) {
  return node == "&" || node == "\\\\" || node.find("\\begin{array}") != std::string::npos ||
         node.find("\\end{array}") != std::string::npos;
}

// clean_span
std::vector<std::string> CleanSpans(const std::vector<std::string>& nodes, const std::vector<NodeTag>& tags) {
  std::vector<std::string> out = nodes;
  std::vector<size_t> valid;
  for (size_t idx = 0; idx < tags.size(); ++idx) {
    if (!IsStructural(nodes[idx])) valid.push_back(idx);
  }
  std::set<NodeTag> distinct;
  for (size_t idx : valid) distinct.insert(tags[idx]);
  for (const auto& span : distinct) {
    std::vector<size_t> same;
    for (size_t idx : valid) {
      if (tags[idx] == span) same.push_back(idx);
    }
    size_t num_left = 0, num_right = 0;
    for (size_t idx : same) {
      num_left += CountLeft(nodes[idx]);
      num_right += CountRight(nodes[idx]);
    }
    if (num_left == num_right) continue;
    std::vector<std::vector<std::string>> fixed;
    for (size_t idx : same) fixed.push_back(SplitWithLeftRight(nodes[idx]));
    // left_right_match
    std::vector<std::pair<std::string, std::pair<size_t, size_t>>> stack;
    for (size_t si = 0; si < fixed.size(); ++si) {
      for (size_t ti = 0; ti < fixed[si].size(); ++ti) {
        const std::string& tok = fixed[si][ti];
        if (!Contains(kValidLeft, tok) && !Contains(kValidRight, tok)) continue;
        if (stack.empty()) {
          stack.push_back({tok, {si, ti}});
        } else if (IsPair(stack.back().first, tok)) {
          stack.pop_back();
        } else {
          stack.push_back({tok, {si, ti}});
        }
      }
    }
    for (const auto& [tok, where] : stack) {
      std::string& piece = fixed[where.first][where.second];
      if (tok.find("\\left") != std::string::npos) {
        piece += " \\right.";
      } else if (tok.find("\\right") != std::string::npos) {
        piece = "\\left. " + piece;
      }
    }
    for (size_t k = 0; k < same.size(); ++k) {
      std::string joined;
      for (const auto& p : fixed[k]) joined += p;
      out[same[k]] = std::move(joined);
    }
  }
  return out;
}

}  // namespace

namespace {

std::optional<std::string> MatchLeftRight(std::string_view latex, bool v12) {
  if (CountLeft(latex) == CountRight(latex)) return std::string(latex);
  if (py::Count(latex, "\\begin{array}") != py::Count(latex, "\\end{array}")) return std::string(latex);

  const std::vector<std::string> nodes = SplitNodes(py::Strip(latex));
  std::vector<ArrayInfo> arrays;
  if (!TagArrays(nodes, arrays, v12)) return std::nullopt;
  std::stable_sort(arrays.begin(), arrays.end(), [](const ArrayInfo& a, const ArrayInfo& b) {
    return a.contain.size() > b.contain.size();
  });
  const std::vector<NodeTag> tags = TagElements(nodes, arrays);
  const std::vector<std::string> fixed = CleanSpans(nodes, tags);
  std::string out;
  for (const auto& n : fixed) out += n;
  return out;
}

}  // namespace

std::optional<std::string> MatchEquationLeftRight(std::string_view latex) {
  return MatchLeftRight(latex, false);
}

std::string MatchEquationLeftRightV12(std::string_view latex) {
  auto fixed = MatchLeftRight(latex, true);
  return fixed ? *fixed : std::string(latex);
}

}  // namespace mineru::pipeline
