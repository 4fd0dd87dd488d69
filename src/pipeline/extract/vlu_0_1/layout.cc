// pipeline/extract/vlu_0_1/layout.cc — layout line parsing and stage II decisions (see layout.h).
#include "pipeline/extract/vlu_0_1/layout.h"

#include <algorithm>
#include <array>

#include "pipeline/common/layout_scan.h"
#include "pipeline/common/py_text.h"

namespace mineru::pipeline {

namespace {

using namespace layout_scan;  // NOLINT: the shared scanners

struct LineMatch {
  long long c[4];
  std::string type;
  std::string_view tail;
};

// re.match of the layout pattern on one line. `\d+\s+` cannot backtrack into a different split because
// digits and whitespace are disjoint, and `(\w+?)<\|ref_end\|>` ends at the first "<|ref_end|>" (a word
// character run can never contain '<'), so a direct scan is equivalent.
std::optional<LineMatch> MatchLine(std::string_view line) {
  LineMatch m;
  if (!py::StartsWith(line, kBoxStart)) return std::nullopt;
  size_t pos = kBoxStart.size();
  for (int k = 0; k < 4; ++k) {
    if (!ReadNumber(line, pos, m.c[k])) return std::nullopt;
    if (k < 3 && !ReadSpaces(line, pos)) return std::nullopt;
  }
  if (line.substr(pos, kBoxEnd.size()) != kBoxEnd) return std::nullopt;
  pos += kBoxEnd.size();
  if (line.substr(pos, kRefStart.size()) != kRefStart) return std::nullopt;
  pos += kRefStart.size();
  const size_t type_start = pos;
  while (pos < line.size() && IsWordByte(static_cast<unsigned char>(line[pos]))) ++pos;
  if (pos == type_start) return std::nullopt;
  if (line.substr(pos, kRefEnd.size()) != kRefEnd) return std::nullopt;
  m.type = std::string(line.substr(type_start, pos - type_start));
  pos += kRefEnd.size();
  // `(.*)$`: '.' does not match '\n'; lines come from split("\n") so none is left.
  m.tail = line.substr(pos);
  return m;
}

std::optional<int> ParseAngle(std::string_view tail) {
  static constexpr std::array<std::pair<std::string_view, int>, 4> kAngles = {{
      {"<|rotate_up|>", 0},
      {"<|rotate_right|>", 90},
      {"<|rotate_down|>", 180},
      {"<|rotate_left|>", 270},
  }};
  for (const auto& [token, angle] : kAngles) {
    if (tail.find(token) != std::string_view::npos) return angle;
  }
  return std::nullopt;
}

}  // namespace

const std::vector<std::string>& KnownBlockTypes() {
  static const std::vector<std::string> kTypes = {
      "text",         "title",         "table",         "image",          "code",           "header",
      "footer",       "page_number",   "page_footnote", "aside_text",     "equation",       "equation_block",
      "ref_text",     "table_caption", "image_caption", "table_footnote", "image_footnote", "algorithm",
      "code_caption", "list",          "phonetic",      "unknown",
  };
  return kTypes;
}

bool IsKnownBlockType(std::string_view type) {
  const auto& types = KnownBlockTypes();
  return std::find(types.begin(), types.end(), type) != types.end();
}

std::vector<LayoutBlock> ParseLayoutOutput(std::string_view raw, std::vector<std::string>* warnings) {
  std::vector<LayoutBlock> blocks;
  auto warn = [&](std::string_view what, std::string_view line) {
    if (warnings) warnings->push_back(std::string(what) + std::string(line));
  };
  size_t start = 0;
  while (true) {
    const size_t nl = raw.find('\n', start);
    const std::string_view line =
        raw.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    const auto m = MatchLine(line);
    if (!m) {
      warn("line does not match layout format: ", line);
    } else {
      long long x1 = m->c[0], y1 = m->c[1], x2 = m->c[2], y2 = m->c[3];
      const bool in_range =
          std::all_of(std::begin(m->c), std::end(m->c), [](long long v) { return v <= 1000; });
      if (x2 < x1) std::swap(x1, x2);
      if (y2 < y1) std::swap(y1, y2);
      const std::string type = py::LowerForTypeName(m->type);
      if (!in_range || x1 == x2 || y1 == y2) {
        warn("invalid bbox in line: ", line);
      } else if (!IsKnownBlockType(type)) {
        warn("unknown block type in line: ", line);
      } else {
        LayoutBlock b;
        b.type = type;
        b.x1 = static_cast<double>(x1) / 1000.0;
        b.y1 = static_cast<double>(y1) / 1000.0;
        b.x2 = static_cast<double>(x2) / 1000.0;
        b.y2 = static_cast<double>(y2) / 1000.0;
        b.angle = ParseAngle(m->tail);
        if (!b.angle) warn("no angle found in line: ", line);
        blocks.push_back(std::move(b));
      }
    }
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  return blocks;
}

bool ShouldRecognize(std::string_view type, const std::vector<std::string>& extra_skip) {
  if (type == "image" || type == "list" || type == "equation_block") return false;
  // not_extract_list entries only count when they are known block types.
  for (const auto& t : extra_skip) {
    if (t == type && IsKnownBlockType(t)) return false;
  }
  return true;
}

Task TaskForType(std::string_view type) {
  if (type == "table") return Task::kTable;
  if (type == "equation") return Task::kFormula;
  return Task::kText;
}

std::string_view PromptForTask(Task task) {
  switch (task) {
    case Task::kLayout:
      return "\nLayout Detection:";
    case Task::kTable:
      return "\nTable Recognition:";
    case Task::kFormula:
      return "\nFormula Recognition:";
    case Task::kText:
      break;
  }
  return "\nText Recognition:";
}

MinerUSampling SamplingForTask(Task task) {
  MinerUSampling p;
  switch (task) {
    case Task::kLayout:
      break;
    case Task::kTable:
      p.presence_penalty = 1.0f;
      p.frequency_penalty = 0.005f;
      break;
    case Task::kText:
    case Task::kFormula:
      p.presence_penalty = 1.0f;
      p.frequency_penalty = 0.05f;
      break;
  }
  return p;
}

std::vector<size_t> RecognitionIndices(const std::vector<LayoutBlock>& blocks,
                                       const std::vector<std::string>& extra_skip) {
  std::vector<size_t> idx;
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (ShouldRecognize(blocks[i].type, extra_skip)) idx.push_back(i);
  }
  return idx;
}

}  // namespace mineru::pipeline
