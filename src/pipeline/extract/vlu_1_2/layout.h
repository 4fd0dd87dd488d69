// pipeline/extract/vlu_1_2/layout.h — stage I parsing and stage II request planning as mineru-vl-utils 1.2.1
// does them (MinerUClientHelper.parse_layout_output / prepare_for_extract, the MinerU 3.4.4 configuration:
// image_analysis=True, no not_extract_list). The 0.1.x behaviour is in extract/vlu_0_1/.
//
// Plain data: no image, no model. The crop geometry of each request comes with it (crop_geometry.h,
// ceil-rounding upscale as 1.2.1's resize_by_need).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pipeline/doc/blocks.h"
#include "pipeline/extract/policy.h"

namespace mineru::pipeline {

// The 31 block types of mineru-vl-utils 1.2.1 (structs.BLOCK_TYPES).
bool IsKnownBlockTypeV12(std::string_view type);

// Parses the raw layout output the way 1.2.1's re.finditer does with
//   <|box_start|>(\d+)\s+(\d+)\s+(\d+)\s+(\d+)<|box_end|><|ref_start|>(\w+?)<|ref_end|>
//   (<|rotate_(up|right|down|left)|>)?(.*?)(?=<|box_start|>|$)        (DOTALL)
// No newline is needed between blocks; text that does not start a match is skipped silently. Per match:
// a coordinate > 1000 or a degenerate box -> skipped (warning); the type is lowercased, "unknown"
// becomes "image", "inline_formula" is dropped, other unknown types are skipped (warning); the angle
// comes only from the rotation token right after <|ref_end|> (none -> no angle, warning); a text
// block whose tail contains "txt_contd_tgt" gets merge_prev. Digits are ASCII only (the model emits
// nothing else; Python would also accept other Unicode digits).
// Then text/equation/equation_block blocks covered >= 0.9 by a table are removed.
// `warnings` receives the reference's warnings in order.
std::vector<LayoutBlock> ParseLayoutOutputV12(std::string_view raw,
                                              std::vector<std::string>* warnings = nullptr);

// Fraction of `inner` inside `outer` (intersection / inner area; 0 for an empty inner box), computed
// with the reference's operations in the same order so ties at 0.9 come out the same.
double CoverRatioV12(const LayoutBlock& inner, const LayoutBlock& outer);

// prepare_for_extract of 1.2.1. Mutates `blocks`: image_caption blocks covered >= 0.9 by an
// image/chart/image_block are removed (the reference removes them from the page result too).
// Requests: every block except list, equation_block and image_block; image and chart only when
// image_analysis is on, they are not covered >= 0.9 by an image_block and pass the size rule
// ((w > 0.1 and h > 0.1) or w*h > 0.01); images absorbed by a table (>= 0.9 inside, best table by
// ratio then smaller area) are not requested and dropped from the output. A crop with no pixels is
// not requested (content stays null). page_w/page_h: the page image in pixels.
ExtractPlan PlanExtractV12(std::vector<LayoutBlock>& blocks, int page_w, int page_h,
                           bool image_analysis = true, std::vector<std::string>* warnings = nullptr);

// Prompt and sampling by block type (1.2.1 DEFAULT_PROMPTS / DEFAULT_SAMPLING_PARAMS).
std::string_view PromptForTypeV12(std::string_view type);
MinerUSampling SamplingForTypeV12(std::string_view type);

}  // namespace mineru::pipeline
