// pipeline/write/mineru_3_4/text_join.h — MinerU 3.4.4 span joining for Markdown and the content lists.
// Internal to mkcontent.cc (see text_join.cc for the references).
#pragma once

#include <string>

#include "pipeline/doc/json.h"

namespace mineru::pipeline::v34 {

// _normalize_text_content: None -> "", full-width A-Z a-z 0-9 -> ASCII.
std::string NormalizeText(const Json& content);
// escape_conservative_markdown_text: "\" before * _ ` ~ $ with an even run of backslashes before.
std::string EscapeConservative(const std::string& content);
// escape_text_block_markdown_prefix: "\" before a leading #..###### / + / - marker.
std::string EscapePrefix(const std::string& s);

// merge_para_with_text (formula_enable on). Normalises the block's TEXT spans in place.
std::string MergeParaWithText(Json& block, bool escape_prefix = true);
// merge_para_with_text_v2: a list of {"type": text|phonetic|equation_inline, "content"} objects.
Json MergeParaWithTextV2(Json& block);
// render_algorithm_html_from_lines: the mineru-algorithm div, or "" when the body is blank.
std::string AlgorithmHtml(Json& block);

}  // namespace mineru::pipeline::v34
