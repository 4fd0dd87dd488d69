// pipeline/common/equation_blocks.cc — do_handle_equation_block, the same in mineru-vl-utils 0.1.17
// and 1.2.1 (see equation_blocks.h).
#include "pipeline/common/equation_blocks.h"

#include <algorithm>
#include <map>

#include "pipeline/common/formula.h"

namespace mineru::pipeline {

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

}  // namespace mineru::pipeline
