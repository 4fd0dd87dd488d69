// pipeline/extract/vlu_1_2/post_process.h — mineru-vl-utils 1.2.1 post_process() as MinerU 3.4.4 calls it
// (simple_post_process=False, handle_equation_block=True, abandon_list/paratext=False,
// enable_table_formula_eq_wrap=True):
//   1. table content: OTSL -> HTML, then \(..\) / \[..\] outside existing <eq>..</eq> become <eq>..</eq>;
//      image/chart content: the Image Analysis tags decide the block (table, equation, chart with
//      sub_type, image with sub_type) — see ProcessImageAnalysis;
//   2. list_item -> text (merge_prev false);
//   3. "[Non-Text]" contents: header/footer keep the box with "", image/chart/table/equation/list/
//      image_block/equation_block keep it, every other block is dropped;
//   4. equation: FixEquationV12; text: display->inline, macro spacing, underscores outside;
//   5. equation_block merge (as 0.1.x), \[ \] brackets, equation_block and absorbed images dropped.
// Table images are not masked in the crop (1.2.1 draws random tokens into it and restores <img> data
// URIs; we do not): absorbed images are dropped as the reference drops them.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/doc/blocks.h"

namespace mineru::pipeline {

// re.sub(r"\\\[(.*?)\\\]") turning display math into inline \(..\) unless the inner text is only
// digits, '-', '–', ',' and whitespace (then it stays \[..\]). Digits: ASCII only.
std::string TextDisplayToInline(std::string_view text);
// Inside each \(..\): "\cong", "\to", "\times", "\subset", "\in" directly followed by one letter that
// ends a word get a space ("\toX" -> "\to X"), except \top, \int, \inf.
std::string TextMacroSpacing(std::string_view text);
// Inside each \(..\) (non-empty) holding a run of 3+ underscores: the runs move outside, the rest is
// re-wrapped, pieces joined by " ".
std::string TextUnderscoresOutside(std::string_view text);
// replace_table_formula_delimiters(enabled=True).
std::string TableFormulaToEq(std::string_view html);

// process_image_or_chart: the tagged fields and the normalised content.
struct ImageAnalysis {
  std::string cls, sub_class, caption, content;
};
// Flowcharts: emptied when the Mermaid repetition detector flags them, else node-id legalisation,
// invalid edge lines, invalid subgraph lines; then the strict extraction.
ImageAnalysis ProcessImageAnalysis(std::string_view raw);
// try_fix_chart_invalid_repetition: content with signs of degenerate repetition (escaped pipes, 5
// newlines, a repeated whole, a 20-char run, repeated cells/fragments/lines/tokens) becomes the
// largest well-formed Markdown table in it (re-formatted), if there is one (chart_repetition.cc).
std::string FixChartRepetition(std::string_view content);
// convert_markdown_table_to_html; nullopt when the content is not one well-formed Markdown table.
std::optional<std::string> MarkdownTableToHtml(std::string_view content);
bool HasMalformedMarkdownTable(std::string_view content);
// extract_and_validate_mermaid_strict: fence extraction, header spelling, arrow and node fixes.
std::string MermaidStrict(std::string_view content);
// The flowchart repairs: try_fix_mermaid_node_id_legalization (mermaid_node_ids.cc),
// try_fix_mermaid_invalid_edge_lines and try_fix_mermaid_invalid_subgraph_lines
// (mermaid_invalid_lines.cc), and the arrow/node step of the strict extraction (mermaid_arrows.cc).
std::string MermaidNodeIdLegalize(std::string_view content);
std::string MermaidInvalidEdgeLines(std::string_view content);
std::string MermaidInvalidSubgraphLines(std::string_view content);
std::string MermaidFixArrowsAndNodes(std::string_view code);
// detect_mermaid_repetition_issues(content) is non-empty (labels, node ids, edges, raw lines;
// mermaid_repetition.cc).
bool MermaidHasRepetition(std::string_view content);

// replace_table_image_tokens: each `\[\s*XXXX\s*\]` becomes <img src="URI"/>.
std::string ReplaceTableImageTokens(std::string_view html, const TableImageTokens& tokens);

// The whole chain on one page. `recognised` has one entry per layout block (nullopt = not requested);
// `absorbed` marks images absorbed by a table (may be empty); `table_tokens` (may be empty) holds
// per block the tokens masked into a table's crop.
std::vector<ContentBlock> PostProcessPageV12(const std::vector<LayoutBlock>& layout,
                                             const std::vector<std::optional<std::string>>& recognised,
                                             const std::vector<bool>& absorbed,
                                             const std::vector<TableImageTokens>& table_tokens = {});

}  // namespace mineru::pipeline
