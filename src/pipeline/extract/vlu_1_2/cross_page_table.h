// pipeline/extract/vlu_1_2/cross_page_table.h — mineru-vl-utils 1.2.1's cross-page table detection
// (post_process/cross_page_table.py, with MinerU 3.4.4's mineru/utils/table_merge.py helpers it
// imports): for the last table of a page and the first table of the next one, a text-only request
// shows the model the previous table's last row and the next table's first data row; its answer
// (one 0/1 flag per rendered cell of that last row: "this cell continues on the next page") becomes
// `cell_merge` on the second table, expanded to the previous row's visual columns.
//
// Pairs: page i-1's last table (only captions, footnotes, header, footer, page number, page footnote
// after it) with page i's first table (only those before it), both with content; then MinerU's
// structural check (widths within 10 %, equal column counts or matching boundary rows), and boundary
// rows with the same number of rendered segments. MinerU asks in windows of 64 pages: no pair spans
// pages 64k-1 and 64k of one document (MINERU_PROCESSING_WINDOW_SIZE's default).
//
// Divergences, on hostile model output only: a span attribute Python's int() would reject (the
// reference raises) or beyond +-1000 skips the pair instead; so does a table over 10^6 grid cells.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pipeline/doc/blocks.h"

namespace mineru::pipeline {

struct CrossPageTask {
  int prev_page = 0, prev_block = 0;  // indices into the pages given to CrossPageTableTasks
  int curr_page = 0, curr_block = 0;
  std::string prompt;
  size_t segments = 0;                      // flags the answer must have
  int expanded_cols = 0;                    // length of cell_merge
  std::vector<std::pair<int, int>> ranges;  // visual columns [start, end) of each previous segment
};

// pages: each page's post-processed 1.2.1 blocks in reading order. Tasks in page order.
std::vector<CrossPageTask> CrossPageTableTasks(const std::vector<std::vector<ContentBlock>>& pages);

// The sampling of the "[cross_page_table_merge]" requests (text only, default system prompt).
MinerUSampling CrossPageSampling();

// Python's int(str) for a span attribute: optional surrounding whitespace and sign, ASCII digits
// (underscores between digits allowed). nullopt where Python raises, or outside [-1e6, 1e6].
std::optional<int> PyIntAttribute(std::string_view value);

// The first `\[[\s\d,]+\]` in the answer read as a JSON list of 0/1 (non-empty); else nullopt.
std::optional<std::vector<int>> ParseCellMergeAnswer(std::string_view answer);

// The answer to task as cell_merge (nullopt when malformed or of the wrong length).
std::optional<std::vector<int>> CellMergeFromAnswer(const CrossPageTask& task, std::string_view answer);

}  // namespace mineru::pipeline
