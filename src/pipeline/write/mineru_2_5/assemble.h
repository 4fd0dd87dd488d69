// pipeline/write/mineru_2_5/assemble.h — MinerU 2.5.4 "vlm" backend assembly: model output -> middle.json,
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

#include "pipeline/common/code_language.h"
#include "pipeline/doc/blocks.h"
#include "pipeline/doc/json.h"

namespace mineru::pipeline {

struct AssembleOptions {
  std::string version_name = "2.5.4";  // middle.json "_version_name" (mineru.__version__)
  ImagePathFn image_path;              // null: every image_path is ""
  CodeLanguageFn guess_code_language;  // null: GuessCodeLanguage
};

// middle.json: {"pdf_info": [page...], "_backend": "vlm", "_version_name": ...}; each page
// {"para_blocks", "discarded_blocks", "page_size": [w, h], "page_idx"}.
// Not reproduced: cross-page table merging (merge_table) and LLM-aided title levels (off by default).
Json MiddleJson(const std::vector<PageInput>& pages, const AssembleOptions& options = {});
// The same from each page's PageInfoJson, in order.
Json MiddleJsonFromPages(Json pdf_info, const AssembleOptions& options = {});

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

}  // namespace mineru::pipeline
