// pipeline/extract/vlu_0_1/layout.h — stage I output parsing and the per-block stage II decisions.
//
// Reference: mineru-vl-utils `MinerUClientHelper.parse_layout_output` / `prepare_for_extract` at the
// 2509-era commit (0.1.x, spec/MINERU25.md §4.1-4.4). Everything here is plain data: no image, no model.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/doc/blocks.h"

namespace mineru::pipeline {

// The 22 block types of MinerU2.5-2509 (mineru-vl-utils structs.BLOCK_TYPES, 0.1.x).
const std::vector<std::string>& KnownBlockTypes();
bool IsKnownBlockType(std::string_view type);

// Parses the raw layout output. Per line (split on '\n' only):
//   ^<|box_start|>(\d+)\s+(\d+)\s+(\d+)\s+(\d+)<|box_end|><|ref_start|>(\w+?)<|ref_end|>(.*)$
// Lines that do not match are skipped; so are boxes with a coordinate outside 0..1000 (checked before
// the swap), boxes that are degenerate after swapping x1/x2 and y1/y2 into order, and types that are
// not known after lowercasing. bbox = coordinate / 1000.0. The angle is the first rotation token found
// in the tail, tested in the order up(0), right(90), down(180), left(270) — not by position.
// `warnings`, when given, receives one line per skipped line or missing angle (as the reference prints).
std::vector<LayoutBlock> ParseLayoutOutput(std::string_view raw,
                                           std::vector<std::string>* warnings = nullptr);

enum class Task { kLayout, kText, kTable, kFormula };

// Whether a block of this type is sent to stage II. `image`, `list` and `equation_block` are not;
// every other type is (headers, footers, captions included). `extra_skip` mirrors not_extract_list.
bool ShouldRecognize(std::string_view type, const std::vector<std::string>& extra_skip = {});

// table -> kTable, equation -> kFormula, everything else -> kText.
Task TaskForType(std::string_view type);

// "\nLayout Detection:", "\nText Recognition:", "\nTable Recognition:", "\nFormula Recognition:".
std::string_view PromptForTask(Task task);
inline std::string_view PromptForType(std::string_view type) { return PromptForTask(TaskForType(type)); }

// layout: base values; text and formula: presence 1.0, frequency 0.05; table: presence 1.0,
// frequency 0.005. All share temperature 0, top_p 0.01, top_k 1, repetition 1.0, no-repeat-100.
MinerUSampling SamplingForTask(Task task);
inline MinerUSampling SamplingForType(std::string_view type) { return SamplingForTask(TaskForType(type)); }

// The indices (into `blocks`) that stage II recognises, in layout order.
std::vector<size_t> RecognitionIndices(const std::vector<LayoutBlock>& blocks,
                                       const std::vector<std::string>& extra_skip = {});

}  // namespace mineru::pipeline
