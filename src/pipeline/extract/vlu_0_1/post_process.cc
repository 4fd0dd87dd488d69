// pipeline/extract/vlu_0_1/post_process.cc — mineru-vl-utils 0.1.17 post_process() (see post_process.h).
#include "pipeline/extract/vlu_0_1/post_process.h"

#include <algorithm>
#include <map>

#include "base/check.h"
#include "pipeline/common/equation_blocks.h"
#include "pipeline/common/formula.h"
#include "pipeline/common/otsl.h"

namespace mineru::pipeline {

namespace {

bool IsParatext(const std::string& type) {
  return type == "header" || type == "footer" || type == "page_number" || type == "aside_text" ||
         type == "page_footnote" || type == "unknown";
}

bool HasContent(const ContentBlock& b) { return b.content.has_value() && !b.content->empty(); }

}  // namespace

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

}  // namespace mineru::pipeline
