// pipeline/extract/vlu_1_2/layout.cc — 1.2.1 layout parsing and request planning (see layout.h).
#include "pipeline/extract/vlu_1_2/layout.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <set>

#include "pipeline/common/layout_scan.h"
#include "pipeline/common/py_text.h"

namespace mineru::pipeline {

namespace {

using namespace layout_scan;  // NOLINT: the shared scanners

struct Match {
  long long c[4];
  std::string type;
  std::optional<int> angle;  // from the optional rotation group
  std::string_view tail;
  std::string_view whole;
  size_t end = 0;
};

// `(.*?)(?=<\|box_start\|>|$)` with DOTALL and no MULTILINE: the tail stops at the next box start, or
// at the end of the text, or just before a final "\n" (where `$` also matches), whichever comes first.
size_t TailEnd(std::string_view s, size_t from) {
  const size_t next = s.find(kBoxStart, from);
  size_t dollar = s.size();
  if (!s.empty() && s.back() == '\n' && s.size() - 1 >= from) dollar = s.size() - 1;
  return std::min(next == std::string_view::npos ? s.size() : next, dollar);
}

std::optional<Match> MatchAt(std::string_view s, size_t at) {
  if (s.substr(at, kBoxStart.size()) != kBoxStart) return std::nullopt;
  Match m;
  size_t pos = at + kBoxStart.size();
  for (int k = 0; k < 4; ++k) {
    if (!ReadNumber(s, pos, m.c[k])) return std::nullopt;
    if (k < 3 && !ReadSpaces(s, pos)) return std::nullopt;
  }
  for (std::string_view lit : {kBoxEnd, kRefStart}) {
    if (s.substr(pos, lit.size()) != lit) return std::nullopt;
    pos += lit.size();
  }
  const size_t type_start = pos;
  while (pos < s.size() && IsWordByte(static_cast<unsigned char>(s[pos]))) ++pos;
  if (pos == type_start || s.substr(pos, kRefEnd.size()) != kRefEnd) return std::nullopt;
  m.type = std::string(s.substr(type_start, pos - type_start));
  pos += kRefEnd.size();
  static constexpr std::array<std::pair<std::string_view, int>, 4> kAngles = {
      {{"<|rotate_up|>", 0}, {"<|rotate_right|>", 90}, {"<|rotate_down|>", 180}, {"<|rotate_left|>", 270}}};
  for (const auto& [token, angle] : kAngles) {
    if (s.substr(pos, token.size()) == token) {
      m.angle = angle;
      pos += token.size();
      break;
    }
  }
  const size_t end = TailEnd(s, pos);
  m.tail = s.substr(pos, end - pos);
  m.whole = s.substr(at, end - at);
  m.end = end;
  return m;
}

// The reference's _find_covered_block_indices.
std::set<size_t> CoveredIndices(const std::vector<LayoutBlock>& blocks,
                                const std::set<std::string>& candidates,
                                const std::set<std::string>& containers) {
  std::vector<size_t> cont;
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (containers.count(blocks[i].type)) cont.push_back(i);
  }
  std::set<size_t> covered;
  if (cont.empty()) return covered;
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (!candidates.count(blocks[i].type)) continue;
    for (size_t c : cont) {
      if (c != i && CoverRatioV12(blocks[i], blocks[c]) >= 0.9) {
        covered.insert(i);
        break;
      }
    }
  }
  return covered;
}

std::vector<LayoutBlock> Without(std::vector<LayoutBlock> blocks, const std::set<size_t>& drop) {
  if (drop.empty()) return blocks;
  std::vector<LayoutBlock> out;
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (!drop.count(i)) out.push_back(std::move(blocks[i]));
  }
  return out;
}

double Area(const LayoutBlock& b) { return std::max(0.0, b.x2 - b.x1) * std::max(0.0, b.y2 - b.y1); }

// build_table_image_map: image index -> the table that absorbs it (SIZE_MAX: none).
std::vector<size_t> AbsorbingTables(const std::vector<LayoutBlock>& blocks,
                                    const std::vector<size_t>& tables) {
  std::vector<size_t> owner(blocks.size(), SIZE_MAX);
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (blocks[i].type != "image") continue;
    bool found = false;
    double best_ratio = 0.9, best_area = 0;
    for (size_t t : tables) {
      const double ratio = CoverRatioV12(blocks[i], blocks[t]);
      if (ratio < 0.9) continue;
      const double area = Area(blocks[t]);
      if (!found || ratio > best_ratio || (ratio == best_ratio && area < best_area)) {
        found = true;
        best_ratio = ratio;
        best_area = area;
        owner[i] = t;
      }
    }
  }
  return owner;
}

bool EligibleForImageAnalysis(const LayoutBlock& b) {
  const double w = b.x2 - b.x1, h = b.y2 - b.y1;
  return (w > 0.1 && h > 0.1) || w * h > 0.01;
}

}  // namespace

bool IsKnownBlockTypeV12(std::string_view type) {
  static const std::set<std::string, std::less<>> kTypes = {
      "text",           "title",          "doc_title",    "paragraph_title", "table",
      "equation",       "formula_number", "code",         "algorithm",       "aside_text",
      "ref_text",       "index",          "phonetic",     "list_item",       "caption",
      "table_caption",  "image_caption",  "code_caption", "footnote",        "table_footnote",
      "image_footnote", "header",         "footer",       "page_number",     "page_footnote",
      "image",          "chart",          "list",         "image_block",     "equation_block",
      "unknown"};
  return kTypes.count(type) > 0;
}

double CoverRatioV12(const LayoutBlock& inner, const LayoutBlock& outer) {
  const double inner_area = Area(inner);
  if (inner_area == 0) return 0.0;
  const double x1 = std::max(inner.x1, outer.x1), y1 = std::max(inner.y1, outer.y1);
  const double x2 = std::min(inner.x2, outer.x2), y2 = std::min(inner.y2, outer.y2);
  const double inter = (x2 <= x1 || y2 <= y1) ? 0.0 : (x2 - x1) * (y2 - y1);
  return inter / inner_area;
}

std::vector<LayoutBlock> ParseLayoutOutputV12(std::string_view raw, std::vector<std::string>* warnings) {
  auto warn = [&](std::string_view what, std::string_view text) {
    if (warnings) warnings->push_back(std::string(what) + std::string(text));
  };
  std::vector<LayoutBlock> blocks;
  bool matched = false;
  size_t at = 0;
  while (at < raw.size()) {
    const size_t cand = raw.find(kBoxStart, at);
    if (cand == std::string_view::npos) break;
    const auto m = MatchAt(raw, cand);
    if (!m) {
      at = cand + 1;
      continue;
    }
    matched = true;
    at = m->end;
    long long x1 = m->c[0], y1 = m->c[1], x2 = m->c[2], y2 = m->c[3];
    const bool in_range =
        std::all_of(std::begin(m->c), std::end(m->c), [](long long v) { return v <= 1000; });
    if (x2 < x1) std::swap(x1, x2);
    if (y2 < y1) std::swap(y1, y2);
    if (!in_range || x1 == x2 || y1 == y2) {
      warn("Invalid bbox in layout output line: ", m->whole);
      continue;
    }
    std::string type = py::LowerForTypeName(m->type);
    if (type == "unknown") type = "image";
    if (type == "inline_formula") continue;
    if (!IsKnownBlockTypeV12(type)) {
      warn("Unknown block type in layout output line: ", m->whole);
      continue;
    }
    LayoutBlock b;
    b.type = type;
    b.x1 = static_cast<double>(x1) / 1000.0;
    b.y1 = static_cast<double>(y1) / 1000.0;
    b.x2 = static_cast<double>(x2) / 1000.0;
    b.y2 = static_cast<double>(y2) / 1000.0;
    b.angle = m->angle;
    if (!b.angle) warn("No angle found in layout output line: ", m->whole);
    if (type == "text") b.merge_prev = m->tail.find("txt_contd_tgt") != std::string_view::npos;
    blocks.push_back(std::move(b));
  }
  if (!matched && !py::IsBlank(raw)) warn("Layout output does not match expected format: ", raw);
  const std::set<size_t> inside_tables =
      CoveredIndices(blocks, {"text", "equation", "equation_block"}, {"table"});
  return Without(std::move(blocks), inside_tables);
}

std::string_view PromptForTypeV12(std::string_view type) {
  if (type == "table") return "\nTable Recognition:";
  if (type == "equation") return "\nFormula Recognition:";
  if (type == "image" || type == "chart") return "\nImage Analysis:";
  return "\nText Recognition:";
}

MinerUSampling SamplingForTypeV12(std::string_view type) {
  MinerUSampling p;
  p.presence_penalty = 1.0f;
  p.frequency_penalty = type == "table" ? 0.005f : 0.05f;
  return p;
}

ExtractPlan PlanExtractV12(std::vector<LayoutBlock>& blocks, int page_w, int page_h, bool image_analysis,
                           std::vector<std::string>* warnings) {
  const std::set<size_t> captions =
      CoveredIndices(blocks, {"image_caption"}, {"image", "chart", "image_block"});
  blocks = Without(std::move(blocks), captions);
  const std::set<size_t> non_standalone = CoveredIndices(blocks, {"image", "chart"}, {"image_block"});
  std::set<std::string> skip = {"list", "equation_block", "image_block"};
  if (!image_analysis) skip.insert({"image", "chart"});
  std::vector<size_t> tables;
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (blocks[i].type == "table") tables.push_back(i);
  }
  ExtractPlan plan;
  const std::vector<size_t> owner = AbsorbingTables(blocks, tables);
  plan.absorbed.assign(blocks.size(), false);
  for (size_t i = 0; i < blocks.size(); ++i) plan.absorbed[i] = owner[i] != SIZE_MAX;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const LayoutBlock& b = blocks[i];
    if (skip.count(b.type) || plan.absorbed[i]) continue;
    if ((b.type == "image" || b.type == "chart") &&
        (non_standalone.count(i) || !EligibleForImageAnalysis(b))) {
      continue;
    }
    ExtractRequest r;
    r.index = i;
    r.crop = PlanBlockCrop(b.x1, b.y1, b.x2, b.y2, b.angle, page_w, page_h, /*ceil_upscale=*/true);
    if (r.crop.box.width() < 1 || r.crop.box.height() < 1 || r.crop.empty) {
      if (warnings) warnings->push_back("Cropped block image has invalid size");
      continue;
    }
    if (b.type == "table") {
      for (size_t k = 0; k < blocks.size(); ++k) {
        if (owner[k] == i) r.table_images.push_back(k);
      }
      std::stable_sort(r.table_images.begin(), r.table_images.end(), [&](size_t a, size_t c) {
        return std::make_pair(blocks[a].y1, blocks[a].x1) < std::make_pair(blocks[c].y1, blocks[c].x1);
      });
    }
    r.prompt = std::string(PromptForTypeV12(b.type));
    r.sampling = SamplingForTypeV12(b.type);
    plan.requests.push_back(std::move(r));
  }
  return plan;
}

}  // namespace mineru::pipeline
