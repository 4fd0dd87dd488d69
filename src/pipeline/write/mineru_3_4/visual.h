// pipeline/write/mineru_3_4/visual.h — MinerU 3.4.4 visual grouping (utils/visual_magic_model_utils.py):
// caption fallbacks, image_block absorption and caption/footnote attachment. Internal to assemble_v34.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "pipeline/common/box_relations.h"
#include "pipeline/doc/json.h"

namespace mineru::pipeline::v34 {

// MagicModel block types used by the grouping.
inline constexpr const char* kImageBlockBody = "image_block_body";

// fallback_inline_caption_fragments (+ the stacked table caption fallback) and
// fallback_leading_table_continuation_captions: some text/footnote blocks become "caption" (their
// merge_prev is removed). `blocks` are the MagicModel blocks in index order.
void FallbackCaptions(std::vector<Json>& blocks);

// regroup_visual_blocks. Groups per kind (image, table, chart, code: in that order in `groups`),
// each sorted by index; `unmatched` are the positions (into blocks) of captions/footnotes with no
// parent. sub_images are set on image_block groups.
struct VisualGroups {
  std::array<std::vector<Json>, 4> groups;
  std::vector<size_t> unmatched;
};
VisualGroups RegroupVisualBlocks(const std::vector<Json>& blocks);

// The "bbox" of a MagicModel block as ints.
IBox BoxOfJson(const Json& b);

// table_continuation.is_table_continuation_text.
bool IsTableContinuationText(const std::string& text);

}  // namespace mineru::pipeline::v34
