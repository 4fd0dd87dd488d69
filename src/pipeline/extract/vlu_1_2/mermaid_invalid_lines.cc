// pipeline/extract/vlu_1_2/mermaid_invalid_lines.cc — mineru-vl-utils 1.2.1
// mermaid_invalid_edge_lines.py (edge lines with a single unquoted '|' are dropped) and
// mermaid_invalid_subgraph_lines.py (a subgraph title that is not an id gets a sanitised, unique id
// with the title as its label). Not node-id legalisation (mermaid_node_ids.cc), the strict arrow and
// node fixes (mermaid_arrows.cc) nor the repetition detector (mermaid_repetition.cc).
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "pipeline/common/py_text.h"
#include "pipeline/extract/vlu_1_2/mermaid_scan.h"
#include "pipeline/extract/vlu_1_2/post_process.h"

namespace mineru::pipeline {

namespace {

using namespace mermaid_scan;  // NOLINT: the shared scans

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

}  // namespace mineru::pipeline
