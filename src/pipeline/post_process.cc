// pipeline/post_process.cc — mineru-vl-utils post_process() and model.json (see post_process.h).
#include "pipeline/post_process.h"

#include <algorithm>
#include <map>

#include "base/check.h"
#include "pipeline/formula.h"
#include "pipeline/otsl.h"

namespace mineru::pipeline {

namespace {

bool IsParatext(const std::string& type) {
  return type == "header" || type == "footer" || type == "page_number" || type == "aside_text" ||
         type == "page_footnote" || type == "unknown";
}

bool HasContent(const ContentBlock& b) { return b.content.has_value() && !b.content->empty(); }

Json BboxJson(const double b[4]) { return Json::array({b[0], b[1], b[2], b[3]}); }

}  // namespace

// do_handle_equation_block
std::vector<ContentBlock> HandleEquationBlocks(std::vector<ContentBlock> blocks) {
  std::vector<size_t> sem_indices, span_indices;
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (blocks[i].type == "equation_block") {
      sem_indices.push_back(i);
    } else if (blocks[i].type == "equation") {
      span_indices.push_back(i);
    }
  }
  std::map<size_t, std::vector<size_t>> sem_spans;  // equation_block index -> covered equations
  std::vector<bool> covered(blocks.size(), false);
  for (size_t sem : sem_indices) {
    std::vector<size_t> inside;
    for (size_t span : span_indices) {
      if (BboxCoverRatio(blocks[sem].bbox, blocks[span].bbox) > 0.9) inside.push_back(span);
    }
    if (inside.size() > 1) {
      for (size_t s : inside) covered[s] = true;
      sem_spans[sem] = std::move(inside);
    }
  }
  std::vector<ContentBlock> out;
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (covered[i]) continue;
    const auto it = sem_spans.find(i);
    if (it != sem_spans.end()) {
      std::vector<std::string> contents;
      // A None content would raise in the reference; it never happens for recognised equations.
      for (size_t s : it->second) contents.push_back(blocks[s].content.value_or(""));
      ContentBlock merged;
      merged.type = "equation";
      std::copy(std::begin(blocks[i].bbox), std::end(blocks[i].bbox), merged.bbox);
      merged.angle = blocks[i].angle;
      merged.content = CombineEquations(contents);
      out.push_back(std::move(merged));
      continue;
    }
    if (blocks[i].type == "equation_block") continue;
    out.push_back(std::move(blocks[i]));
  }
  return out;
}

std::vector<ContentBlock> PostProcessBlocks(std::vector<ContentBlock> blocks,
                                            const PostProcessOptions& options) {
  for (auto& b : blocks) {
    if (b.type == "table" && HasContent(b)) b.content = OtslToHtml(*b.content);
  }
  if (options.simple_post_process) return blocks;

  for (auto& b : blocks) {
    if (b.type == "equation" && HasContent(b)) b.content = FixEquation(*b.content);
  }
  if (options.handle_equation_block) blocks = HandleEquationBlocks(std::move(blocks));
  for (auto& b : blocks) {
    if (b.type == "equation" && HasContent(b)) b.content = AddEquationBrackets(*b.content);
  }
  std::vector<ContentBlock> out;
  for (auto& b : blocks) {
    if (b.type == "equation_block") continue;
    if (options.abandon_list && b.type == "list") continue;
    if (options.abandon_paratext && IsParatext(b.type)) continue;
    out.push_back(std::move(b));
  }
  return out;
}

ContentBlock BlockFromLayout(const LayoutBlock& layout, std::optional<std::string> content) {
  ContentBlock b;
  b.type = layout.type;
  b.bbox[0] = layout.x1;
  b.bbox[1] = layout.y1;
  b.bbox[2] = layout.x2;
  b.bbox[3] = layout.y2;
  b.angle = layout.angle;
  b.content = std::move(content);
  return b;
}

std::vector<ContentBlock> PostProcessPage(const std::vector<LayoutBlock>& layout,
                                          const std::vector<std::optional<std::string>>& recognised,
                                          const PostProcessOptions& options) {
  MINERU_CHECK(layout.size() == recognised.size());
  std::vector<ContentBlock> blocks;
  blocks.reserve(layout.size());
  for (size_t i = 0; i < layout.size(); ++i) blocks.push_back(BlockFromLayout(layout[i], recognised[i]));
  return PostProcessBlocks(std::move(blocks), options);
}

StatusOr<std::vector<std::optional<std::string>>> AssignRecognised(
    const std::vector<LayoutBlock>& layout, const std::vector<std::string>& outputs,
    const std::vector<std::string>& extra_skip) {
  const std::vector<size_t> idx = RecognitionIndices(layout, extra_skip);
  if (idx.size() != outputs.size()) {
    return InvalidArgumentError("page has " + std::to_string(idx.size()) + " blocks to recognise but " +
                                std::to_string(outputs.size()) + " recognition outputs were given");
  }
  std::vector<std::optional<std::string>> per_block(layout.size());
  for (size_t k = 0; k < idx.size(); ++k) per_block[idx[k]] = outputs[k];
  return per_block;
}

Json ModelJson(const std::vector<std::vector<ContentBlock>>& pages) {
  Json out = Json::array();
  for (const auto& page : pages) {
    Json jp = Json::array();
    for (const auto& b : page) {
      Json jb = Json::object();
      jb["type"] = b.type;
      jb["bbox"] = BboxJson(b.bbox);
      jb["angle"] = b.angle ? Json(*b.angle) : Json(nullptr);
      jb["content"] = b.content ? Json(*b.content) : Json(nullptr);
      if (b.merge_prev) jb["merge_prev"] = *b.merge_prev;
      if (b.sub_type) jb["sub_type"] = *b.sub_type;
      if (b.cell_merge) jb["cell_merge"] = *b.cell_merge;
      jp.push_back(std::move(jb));
    }
    out.push_back(std::move(jp));
  }
  return out;
}

std::string DumpJson(const Json& j, int indent) {
  return j.dump(indent, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace);
}

}  // namespace mineru::pipeline
