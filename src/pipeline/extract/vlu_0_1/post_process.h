// pipeline/extract/vlu_0_1/post_process.h — from layout + recognised outputs to MinerU's *_model.json.
//
// Reference: mineru-vl-utils 0.1.x `MinerUClient.two_step_extract` (content assignment) and
// `post_process(blocks, handle_equation_block=True, abandon_list=False, abandon_paratext=False)`:
//   1. table with non-empty content -> OtslToHtml (content unchanged if conversion fails);
//   2. equation with non-empty content -> FixEquation chain;
//   3. equation_block covering > 1 equation (each > 0.9 inside) -> those equations become one
//      `equation` with the block's bbox/angle and CombineEquations(...) content;
//   4. every equation with non-empty content -> AddEquationBrackets;
//   5. equation_block dropped; list / paratext dropped only when asked.
// Text, titles and code are passed through untouched here (code fences are stripped later, during
// MinerU's assembly).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "pipeline/doc/blocks.h"
#include "pipeline/extract/vlu_0_1/layout.h"

namespace mineru::pipeline {

struct PostProcessOptions {
  bool simple_post_process = false;  // only the OTSL conversion
  bool handle_equation_block = true;
  bool abandon_list = false;
  bool abandon_paratext = false;  // header, footer, page_number, aside_text, page_footnote, unknown
};

// `recognised` has one entry per layout block (nullopt where the block was not sent to stage II).
// Sizes must match (checked; a mismatch is a programming error of the caller and aborts in debug).
std::vector<ContentBlock> PostProcessPage(const std::vector<LayoutBlock>& layout,
                                          const std::vector<std::optional<std::string>>& recognised,
                                          const PostProcessOptions& options = {});

// Spreads the recognition outputs of one page (in layout order, one per block that ShouldRecognize)
// over the layout blocks, as two_step_extract does with its `indices`. This is the shape of a replay
// file's "blocks" list. Fails when the count differs from the number of recognised blocks.
StatusOr<std::vector<std::optional<std::string>>> AssignRecognised(
    const std::vector<LayoutBlock>& layout, const std::vector<std::string>& outputs,
    const std::vector<std::string>& extra_skip = {});

// Runs post-processing on already-built blocks (useful when content was filled by other means).
std::vector<ContentBlock> PostProcessBlocks(std::vector<ContentBlock> blocks,
                                            const PostProcessOptions& options = {});

}  // namespace mineru::pipeline
