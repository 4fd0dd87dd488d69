// pipeline/doc/blocks.h — the document model: what the pipeline knows of a page, in plain structs.
//
// One set of types for every MinerU version: the layout answer's blocks (LayoutBlock), the blocks
// after recognition and an extraction version's post-processing (ContentBlock, one page of
// NAME_model.json), a page as the output writers see it (PageInput) and the crops a writer asks
// for (CropRequest). Extraction policies (pipeline/extract/<version>/) produce these; output writers
// (pipeline/write/<version>/) consume them. No JSON, no image, no model here.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mineru::pipeline {

// One element of the layout: type, box in 0..1 of the page (x1<x2, y1<y2), rotation.
struct LayoutBlock {
  std::string type;
  double x1 = 0, y1 = 0, x2 = 0, y2 = 0;
  std::optional<int> angle;  // 0/90/180/270, or none when the line carries no rotation token
  bool merge_prev = false;   // 1.2.1 only: a text block continuing the previous one (<|txt_contd_tgt|>)
};

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

// Every field equal (bbox compared exactly).
bool operator==(const ContentBlock& a, const ContentBlock& b);
inline bool operator!=(const ContentBlock& a, const ContentBlock& b) { return !(a == b); }

// A layout block with its recognised content (type, box, angle), before any post-processing.
ContentBlock BlockFromLayout(const LayoutBlock& layout, std::optional<std::string> content);

// One page of the document as the output writers see it.
struct PageInput {
  std::vector<ContentBlock> blocks;  // post-processed blocks of the page (one page of model.json)
  double width_pt = 0;               // page size in PDF points (MinerU: int(page.get_size()))
  double height_pt = 0;
  int page_idx = 0;
};

// A crop MinerU saves under images/: every image, table and interline_equation span whose bbox is
// non-degenerate (x0 < x1 and y0 < y1), in page block order (3.4.4: also chart spans).
struct CropRequest {
  std::string span_type;  // "image", "table", "chart" or "interline_equation"
  int page_idx = 0;
  int bbox[4] = {0, 0, 0, 0};  // PDF points (ints), as in middle.json
  // Pixel rounding of the cut: false = int(v * scale) per coordinate (MinerU 2.5.4), true =
  // floor for x0/y0 and ceil for x1/y1 (MinerU 3.4.4's normalize_to_int_bbox).
  bool round_out = false;
};

// Returns the span's image_path (a file name such as "<sha256>.jpg", see AssemblyCropHashInput) after
// saving the crop, or "" when no image is written (MinerU writes "" without an image writer).
using ImagePathFn = std::function<std::string(const CropRequest&)>;
// Language label of a code block (MinerU asks Magika; see GuessCodeLanguage for our stand-in).
using CodeLanguageFn = std::function<std::string(std::string_view code)>;
// Writes a decoded inline table image (a `src="data:image/..;base64,.."` in table html) under
// images/ with the given file name. Null: inline images stay as data URIs (MinerU without a writer).
using InlineImageWriteFn = std::function<void(const std::string& name, const std::string& bytes)>;

// Per table block: its image tokens ("[XXXX]") and the data URIs they stand for (table_images.h).
using TableImageTokens = std::vector<std::pair<std::string, std::string>>;

}  // namespace mineru::pipeline
