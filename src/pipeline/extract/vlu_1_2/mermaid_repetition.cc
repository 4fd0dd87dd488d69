// pipeline/extract/vlu_1_2/mermaid_repetition.cc — mineru-vl-utils 1.2.1 mermaid_repetition.py:
// detect_mermaid_repetition_issues is non-empty (oversized or repeating node ids and labels, edges,
// edge labels and free-text lines repeated past its thresholds). Only the detection: emptying a
// flagged flowchart is post_process.cc's, the repairs are mermaid_node_ids.cc,
// mermaid_invalid_lines.cc and mermaid_arrows.cc.
#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pipeline/common/py_text.h"
#include "pipeline/extract/vlu_1_2/mermaid_scan.h"
#include "pipeline/extract/vlu_1_2/post_process.h"

namespace mineru::pipeline {

namespace {

using namespace mermaid_scan;  // NOLINT: the shared scans

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
