// pipeline/layout.h — stage I output parsing and the per-block stage II decisions.
//
// Reference: mineru-vl-utils `MinerUClientHelper.parse_layout_output` / `prepare_for_extract` at the
// 2509-era commit (0.1.x, spec/MINERU25.md §4.1-4.4). Everything here is plain data: no image, no model.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mineru::pipeline {

// The 22 block types of MinerU2.5-2509 (mineru-vl-utils structs.BLOCK_TYPES, 0.1.x).
const std::vector<std::string>& KnownBlockTypes();
bool IsKnownBlockType(std::string_view type);

// One element of the layout: type, box in 0..1 of the page (x1<x2, y1<y2), rotation.
struct LayoutBlock {
  std::string type;
  double x1 = 0, y1 = 0, x2 = 0, y2 = 0;
  std::optional<int> angle;  // 0/90/180/270, or none when the line carries no rotation token
  bool merge_prev = false;   // 1.2.1 only: a text block continuing the previous one (<|txt_contd_tgt|>)
};

// Parses the raw layout output. Per line (split on '\n' only):
//   ^<|box_start|>(\d+)\s+(\d+)\s+(\d+)\s+(\d+)<|box_end|><|ref_start|>(\w+?)<|ref_end|>(.*)$
// Lines that do not match are skipped; so are boxes with a coordinate outside 0..1000 (checked before
// the swap), boxes that are degenerate after swapping x1/x2 and y1/y2 into order, and types that are
// not known after lowercasing. bbox = coordinate / 1000.0. The angle is the first rotation token found
// in the tail, tested in the order up(0), right(90), down(180), left(270) — not by position.
// `warnings`, when given, receives one line per skipped line or missing angle (as the reference prints).
std::vector<LayoutBlock> ParseLayoutOutput(std::string_view raw,
                                           std::vector<std::string>* warnings = nullptr);

// vLLM-style sampling settings of one request (mineru-vl-utils MinerUSamplingParams).
struct MinerUSampling {
  float temperature = 0.0f;
  float top_p = 0.01f;
  int top_k = 1;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  float repetition_penalty = 1.0f;
  int no_repeat_ngram_size = 100;
  int max_new_tokens = 0;  // 0 = no cap (the reference sends None)
};

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
