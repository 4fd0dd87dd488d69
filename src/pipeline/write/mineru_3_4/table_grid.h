// pipeline/write/mineru_3_4/table_grid.h — grid metrics of HTML table rows, as MinerU 3.4.4's
// utils/table_merge.py computes them (_scan_rows, _scan_row_visual_sources, build_visual_col_mapping,
// calculate_row_rendered_segments, detect_table_headers). Internal to the 3.4.4 table merge.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pipeline/common/html_dom.h"

namespace mineru::pipeline::v34 {

using Rows = std::vector<html::Node*>;
using Occupied = std::map<int, std::set<int>>;  // row offset -> occupied columns

struct RowMetrics {
  int row_idx = 0, effective_cols = 0, actual_cols = 0, visual_cols = 0;
};

struct RowScan {
  std::vector<int> row_effective_cols;
  std::vector<RowMetrics> row_metrics;
  int total_cols = 0;
  std::optional<RowMetrics> last_nonempty;
  Occupied tail_occupied;
};

struct RowSignature {
  int effective_cols = 0;
  std::vector<int> colspans, rowspans;
  std::vector<std::string> normalized;
};

std::vector<html::Node*> Cells(html::Node* row);
RowScan ScanRows(const Rows& rows, const Occupied& initial = {}, int start_row_idx = 0);
// Start visual column of every explicit cell of rows[target].
std::vector<int> VisualColMapping(const Rows& rows, int target, const Occupied& initial = {});
int RenderedSegments(const Rows& rows, int target);

// The table state kept while merging (TableMergeState without the block references).
struct TableState {
  std::unique_ptr<html::Node> soup;
  html::Node* tbody = nullptr;
  Rows rows;
  int total_cols = 0;
  std::vector<RowSignature> front_header;
  std::map<int, RowMetrics> front_first_data;
  std::optional<RowMetrics> last_data;
  std::vector<int> row_effective_cols;
  Occupied tail_occupied;
  bool dirty = false;
};

std::optional<TableState> BuildTableState(const std::string& html);
void RefreshTableState(TableState& s);
// detect_table_headers(...)[0] expanded by the rowspans of the current table's header rows.
int HeaderCount(const TableState& prev, const TableState& cur);
bool CheckRowsMatch(const TableState& prev, const TableState& cur);
// full_to_half (U+FF01..U+FF5E -> ASCII).
std::string FullToHalf(const std::string& s);

}  // namespace mineru::pipeline::v34
