// pipeline/assemble.h — MinerU 2.5.4 "vlm" backend assembly: model output -> middle.json,
// Markdown and content_list.json.
//
// References (MinerU @ 2.5.4): backend/vlm/model_output_to_middle_json.py (blocks_to_page_info,
// result_to_middle_json), backend/vlm/vlm_magic_model.py (MagicModel), utils/magic_model_utils.py
// (reduct_overlap, tie_up_category_by_distance_v3), utils/boxbase.py, utils/cut_image.py,
// backend/vlm/vlm_middle_json_mkcontent.py (union_make for MM_MD / NLP_MD / CONTENT_LIST).
// The output objects keep the reference's key order (Python dict insertion order).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/post_process.h"

namespace mineru::pipeline {

// One page of the document as assembly sees it.
struct PageInput {
  std::vector<ContentBlock> blocks;  // post-processed blocks of the page (one page of model.json)
  double width_pt = 0;               // page size in PDF points (MinerU: int(page.get_size()))
  double height_pt = 0;
  int page_idx = 0;
};

// A crop MinerU saves under images/: every image, table and interline_equation span whose bbox is
// non-degenerate (x0 < x1 and y0 < y1), in page block order.
struct CropRequest {
  std::string span_type;  // "image", "table" or "interline_equation"
  int page_idx = 0;
  int bbox[4] = {0, 0, 0, 0};  // PDF points (ints), as in middle.json
};

// Returns the span's image_path (a file name such as "<sha256>.jpg", see AssemblyCropHashInput) after
// saving the crop, or "" when no image is written (MinerU writes "" without an image writer).
using ImagePathFn = std::function<std::string(const CropRequest&)>;

// Language label of a code block (MinerU asks Magika; see GuessCodeLanguage for our stand-in).
using CodeLanguageFn = std::function<std::string(std::string_view code)>;

struct AssembleOptions {
  std::string version_name = "2.5.4";  // middle.json "_version_name" (mineru.__version__)
  ImagePathFn image_path;              // null: every image_path is ""
  CodeLanguageFn guess_code_language;  // null: GuessCodeLanguage
};

// middle.json: {"pdf_info": [page...], "_backend": "vlm", "_version_name": ...}; each page
// {"para_blocks", "discarded_blocks", "page_size": [w, h], "page_idx"}.
// Not reproduced: cross-page table merging (merge_table) and LLM-aided title levels (off by default).
Json MiddleJson(const std::vector<PageInput>& pages, const AssembleOptions& options = {});

// One page_info object (the body of MiddleJson for one page).
Json PageInfoJson(const PageInput& page, const AssembleOptions& options = {});

enum class MarkdownMode { kMultimodal, kNlp };  // MakeMode.MM_MD / NLP_MD

struct MarkdownOptions {
  std::string image_dir = "images";  // img_buket_path: prefix of image links
  MarkdownMode mode = MarkdownMode::kMultimodal;
  bool formula_enable = true;  // MINERU_VLM_FORMULA_ENABLE
  bool table_enable = true;    // MINERU_VLM_TABLE_ENABLE
};

// NAME.md: paragraphs of all pages joined with "\n\n" (discarded blocks omitted).
std::string MarkdownFromMiddle(const Json& middle, const MarkdownOptions& options = {});

// NAME_content_list.json: per page, para_blocks then discarded_blocks, each with "bbox" (0..1000 ints)
// and "page_idx".
Json ContentListFromMiddle(const Json& middle, const std::string& image_dir = "images");

// Stand-in for Magika's guess_language_by_text: a keyword heuristic returning Magika-style labels
// ("python", "cpp", "c", "java", "javascript", "go", "rust", "shell", "sql", "html", ...), "empty" for
// empty input and "txt" when nothing fits. Magika is a neural model, so this cannot match it exactly.
std::string GuessCodeLanguage(std::string_view code);

}  // namespace mineru::pipeline
