// pipeline/post_process.h — from layout + recognised outputs to MinerU's *_model.json.
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

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "pipeline/layout.h"

namespace mineru::pipeline {

// JSON with insertion-ordered keys, like Python dicts (MinerU writes its files with json.dumps).
using Json = nlohmann::ordered_json;

// One block of the model output. content is null for blocks that were not recognised (image, list)
// — model.json writes null there, not "".
struct ContentBlock {
  std::string type;
  double bbox[4] = {0, 0, 0, 0};  // 0..1 of the page
  std::optional<int> angle;
  std::optional<std::string> content;
  // 1.2.1 fields, written to model.json only when set: merge_prev on text blocks (after content),
  // sub_type on analysed images and charts.
  std::optional<bool> merge_prev;
  std::optional<std::string> sub_type;
  // 1.2.1 cross-page table merge, on the first table of a page that continues the previous page's
  // last table: per visual column of the previous table's last row, 1 = this page's first-row cell
  // continues that cell. Written to model.json (after content) when set.
  std::optional<std::vector<int>> cell_merge;
  bool absorbed = false;  // 1.2.1: an image inside a recognised table; dropped at the end
};

struct PostProcessOptions {
  bool simple_post_process = false;  // only the OTSL conversion
  bool handle_equation_block = true;
  bool abandon_list = false;
  bool abandon_paratext = false;  // header, footer, page_number, aside_text, page_footnote, unknown
};

// A layout block with its recognised content (type, box, angle), before any post-processing.
ContentBlock BlockFromLayout(const LayoutBlock& layout, std::optional<std::string> content);

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

// do_handle_equation_block: an equation_block covering > 1 equation (each > 0.9 inside) replaces
// them by one equation with CombineEquations content; equation_blocks are dropped.
std::vector<ContentBlock> HandleEquationBlocks(std::vector<ContentBlock> blocks);

// NAME_model.json: a list of pages, each a list of {"type", "bbox": [x1,y1,x2,y2], "angle", "content"}.
Json ModelJson(const std::vector<std::vector<ContentBlock>>& pages);

// json.dumps(obj, ensure_ascii=False, indent=indent) as MinerU writes its files (invalid UTF-8 is
// replaced rather than throwing).
std::string DumpJson(const Json& j, int indent = 4);

}  // namespace mineru::pipeline
