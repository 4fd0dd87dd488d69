// pipeline/write/mineru_3_4/table_merge.cc — MinerU 3.4.4's cross-page table merge (utils/table_merge.py:
// merge_table, can_merge_tables, perform_table_merge, _apply_cell_merge), run by finalize on
// para_blocks. The previous page's last table absorbs the rows of the next page's first table (repeated
// header rows dropped, colspans adjusted, cells flagged by `cell_merge` moved into its last row); the
// emptied table stays with empty children.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "pipeline/common/py_text.h"
#include "pipeline/write/mineru_3_4/table_grid.h"
#include "pipeline/write/mineru_3_4/text_join.h"
#include "pipeline/write/mineru_3_4/visual.h"

namespace mineru::pipeline::v34 {

namespace {

std::string TypeOf(const Json& b) { return b.value("type", std::string()); }

Json* BodyBlock(Json& table) {
  for (auto& b : table["blocks"]) {
    if (TypeOf(b) == "table_body") return &b;
  }
  return nullptr;
}

Json* BodySpan(Json& table) {
  Json* body = BodyBlock(table);
  if (!body || !body->contains("lines") || (*body)["lines"].empty()) return nullptr;
  Json& spans = (*body)["lines"][0]["spans"];
  return spans.empty() ? nullptr : &spans[0];
}

bool IsContinuationCaption(Json& caption) { return IsTableContinuationText(MergeParaWithText(caption)); }

bool IsPostTableNonContinuationCaption(Json& table, Json& caption) {
  if (IsContinuationCaption(caption)) return false;
  Json* body = BodyBlock(table);
  if (!body) return false;
  return caption["bbox"][1].get<double>() >= (*body)["bbox"][3].get<double>();
}

bool CanMergeTables(Json& cur, Json& prev, const TableState& cs, const TableState& ps) {
  int footnotes = 0;
  for (auto& b : prev["blocks"]) footnotes += TypeOf(b) == "table_footnote";
  bool has_caps = false, continuation = false;
  for (auto& b : cur["blocks"]) {
    if (TypeOf(b) != "table_caption" || IsPostTableNonContinuationCaption(cur, b)) continue;
    has_caps = true;
    continuation = continuation || IsContinuationCaption(b);
  }
  if (has_caps && (!continuation || footnotes > 1)) return false;
  if (!has_caps && footnotes > 0) return false;
  const double w1 = cur["bbox"][2].get<double>() - cur["bbox"][0].get<double>();
  const double w2 = prev["bbox"][2].get<double>() - prev["bbox"][0].get<double>();
  if (std::abs(w1 - w2) / std::min(w1, w2) >= 0.1) return false;
  if (ps.total_cols == cs.total_cols) return true;
  return CheckRowsMatch(ps, cs);
}

void AdjustColspan(const Rows& rows, size_t start, const std::vector<int>& eff, const std::vector<int>& ref,
                   int ref_visual, int target, html::Node* match_row) {
  std::vector<int> match_spans;  // deepcopy(match_reference_row): only its colspans are read
  for (html::Node* c : Cells(match_row)) match_spans.push_back(c->IntAttr("colspan", 1));
  for (size_t r = start; r < rows.size(); ++r) {
    const auto cells = Cells(rows[r]);
    if (cells.empty()) continue;
    int cols = 0;
    for (html::Node* c : cells) cols += c->IntAttr("colspan", 1);
    const int e = r < eff.size() ? eff[r] : 0;
    if (e >= target || cols >= target) continue;
    std::vector<int> spans;
    for (html::Node* c : cells) spans.push_back(c->IntAttr("colspan", 1));
    if (static_cast<int>(cells.size()) == ref_visual && spans == match_spans) {
      if (cells.size() <= ref.size()) {
        for (size_t i = 0; i < cells.size(); ++i) {
          if (ref[i] > 1) cells[i]->SetAttr("colspan", std::to_string(ref[i]));
        }
      }
    } else if (target - e > 0) {
      cells.back()->SetAttr("colspan", std::to_string(cells.back()->IntAttr("colspan", 1) + target - e));
    }
  }
}

bool CellHasContent(html::Node* c) {
  const std::string t = GetText(c);
  if (!py::IsBlank(t)) return true;  // get_text(strip=True): Python whitespace, U+00A0 and U+3000 included
  return !html::FindAll(c, {"img", "svg", "math", "eq", "table", "figure", "object", "embed", "canvas"})
              .empty();
}

void InsertBeforeVisualColumn(const Rows& rows, size_t target, int vcol, std::unique_ptr<html::Node> cell) {
  const auto cells = Cells(rows[target]);
  const auto map = VisualColMapping(rows, static_cast<int>(target));
  for (size_t i = 0; i < map.size() && i < cells.size(); ++i) {
    if (map[i] >= vcol) {
      html::InsertBefore(cells[i], std::move(cell));
      return;
    }
  }
  html::Append(rows[target], std::move(cell));
}

void CarryRowspanToNextRow(const Rows& rows, size_t idx) {
  if (idx + 1 >= rows.size()) return;
  const auto cells = Cells(rows[idx]);
  const auto map = VisualColMapping(rows, static_cast<int>(idx));
  std::vector<std::pair<int, std::unique_ptr<html::Node>>> carried;
  for (size_t i = 0; i < cells.size() && i < map.size(); ++i) {
    const int rs = cells[i]->IntAttr("rowspan", 1);
    if (rs <= 1 || CellHasContent(cells[i])) continue;
    auto copy = html::DeepCopy(cells[i]);
    if (rs - 1 > 1)
      copy->SetAttr("rowspan", std::to_string(rs - 1));
    else
      copy->RemoveAttr("rowspan");
    carried.emplace_back(map[i], std::move(copy));
  }
  std::stable_sort(carried.begin(), carried.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (auto& [v, c] : carried) InsertBeforeVisualColumn(rows, idx + 1, v, std::move(c));
}

// _clip_overlapped_blank_rowspan_cells: blank rowspan cells of the continuation rows whose columns a
// rowspan of the previous table still covers are removed (the rest of their rowspan moves down).
bool ClipOverlappedBlankRowspanCells(const Rows& rows, const Occupied& initial) {
  if (rows.empty() || initial.empty()) return false;
  std::vector<html::Node*> remove;
  std::vector<std::tuple<size_t, int, std::unique_ptr<html::Node>>> moves;
  for (size_t r = 0; r < rows.size(); ++r) {
    const auto cells = Cells(rows[r]);
    const auto map = VisualColMapping(rows, static_cast<int>(r));
    for (size_t i = 0; i < cells.size() && i < map.size(); ++i) {
      const int rs = cells[i]->IntAttr("rowspan", 1), cs = cells[i]->IntAttr("colspan", 1);
      if (rs <= 1 || CellHasContent(cells[i]) || cs <= 0) continue;
      int overlap = 0;
      while (overlap < rs) {
        const auto it = initial.find(static_cast<int>(r) + overlap);
        bool covered = it != initial.end();
        for (int c = map[i]; covered && c < map[i] + cs; ++c) covered = it->second.count(c) > 0;
        if (!covered) break;
        ++overlap;
      }
      if (overlap == 0) continue;
      const int remaining = rs - overlap;
      const size_t target = r + static_cast<size_t>(overlap);
      if (remaining > 0 && target >= rows.size()) continue;
      remove.push_back(cells[i]);
      if (remaining > 0) {
        auto moved = html::DeepCopy(cells[i]);
        if (remaining > 1)
          moved->SetAttr("rowspan", std::to_string(remaining));
        else
          moved->RemoveAttr("rowspan");
        moves.emplace_back(target, map[i], std::move(moved));
      }
    }
  }
  if (remove.empty()) return false;
  for (html::Node* c : remove) (void)html::Extract(c);
  std::stable_sort(moves.begin(), moves.end(), [](const auto& a, const auto& b) {
    return std::make_pair(std::get<0>(a), std::get<1>(a)) > std::make_pair(std::get<0>(b), std::get<1>(b));
  });
  for (auto& [t, v, c] : moves) InsertBeforeVisualColumn(rows, t, v, std::move(c));
  return true;
}

std::map<int, size_t> ExpandByColspan(const std::vector<int>& map, const std::vector<html::Node*>& cells) {
  std::map<int, size_t> out;
  for (size_t i = 0; i < map.size() && i < cells.size(); ++i) {
    for (int c = map[i]; c < map[i] + cells[i]->IntAttr("colspan", 1); ++c) out[c] = i;
  }
  return out;
}

void ApplyCellMerge(TableState& prev, TableState& cur, size_t hc, const Json& cell_merge) {
  if (!cell_merge.is_array() || cell_merge.empty() || hc >= cur.rows.size() || prev.rows.empty()) return;
  html::Node* first = cur.rows[hc];
  const auto cells1 = Cells(prev.rows.back()), cells2 = Cells(first);
  const auto map1 =
      ExpandByColspan(VisualColMapping(prev.rows, static_cast<int>(prev.rows.size()) - 1), cells1);
  const Rows tail(cur.rows.begin() + static_cast<long>(hc), cur.rows.end());
  const auto map2 = ExpandByColspan(VisualColMapping(tail, 0, prev.tail_occupied), cells2);
  std::set<std::pair<size_t, size_t>> done;
  std::set<size_t> cleared;
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t vi = 0; vi < cell_merge.size(); ++vi) {
      if (!(cell_merge[vi].is_number() && cell_merge[vi].get<double>() == 1)) continue;
      const auto a = map1.find(static_cast<int>(vi)), b = map2.find(static_cast<int>(vi));
      if (a == map1.end() || b == map2.end()) continue;
      if (pass == 0 && done.insert({a->second, b->second}).second) {
        html::Node* src = cells2[b->second];
        while (!src->children.empty())
          html::Append(cells1[a->second], html::Extract(src->children.front().get()));
      } else if (pass == 1 && cleared.insert(b->second).second) {
        cells2[b->second]->children.clear();
      }
    }
  }
  bool content = false;
  for (html::Node* c : Cells(first)) content = content || CellHasContent(c);
  if (!content) {
    CarryRowspanToNextRow(cur.rows, hc);
    (void)html::Extract(first);  // the row node is gone from the tree (kept alive below)
    cur.rows.erase(cur.rows.begin() + static_cast<long>(hc));
  }
}

void PerformMerge(TableState& prev, TableState& cur, Json& prev_block, const Json& cur_block,
                  const std::vector<Json>& footnotes) {
  const size_t hc = static_cast<size_t>(std::max(0, HeaderCount(prev, cur)));
  if (hc < cur.rows.size()) {
    const Rows tail(cur.rows.begin() + static_cast<long>(hc), cur.rows.end());
    if (ClipOverlappedBlankRowspanCells(tail, prev.tail_occupied)) RefreshTableState(cur);
  }
  if (!prev.rows.empty() && hc < cur.rows.size()) {
    html::Node* last1 = prev.rows.back();
    html::Node* first2 = cur.rows[hc];
    auto spans_of = [](html::Node* row) {
      std::vector<int> v;
      for (html::Node* c : Cells(row)) v.push_back(c->IntAttr("colspan", 1));
      return v;
    };
    if (prev.total_cols > cur.total_cols) {
      AdjustColspan(cur.rows, hc, cur.row_effective_cols, spans_of(last1),
                    static_cast<int>(Cells(last1).size()), prev.total_cols, first2);
    } else if (cur.total_cols > prev.total_cols) {
      AdjustColspan(prev.rows, 0, prev.row_effective_cols, spans_of(first2),
                    static_cast<int>(Cells(first2).size()), cur.total_cols, last1);
      RefreshTableState(prev);
    }
  }
  ApplyCellMerge(prev, cur, hc, cur_block.value("cell_merge", Json()));
  Rows merged;
  if (prev.tbody && cur.tbody) {
    for (size_t i = hc; i < cur.rows.size(); ++i) {
      html::Node* row = cur.rows[i];
      html::Append(prev.tbody, html::Extract(row));
      merged.push_back(row);
    }
  }
  const int start = static_cast<int>(prev.rows.size());
  prev.rows.insert(prev.rows.end(), merged.begin(), merged.end());
  if (!merged.empty()) {
    const RowScan scan = ScanRows(merged, prev.tail_occupied, start);
    prev.row_effective_cols.insert(prev.row_effective_cols.end(), scan.row_effective_cols.begin(),
                                   scan.row_effective_cols.end());
    prev.total_cols = std::max(prev.total_cols, scan.total_cols);
    if (scan.last_nonempty) prev.last_data = scan.last_nonempty;
    prev.tail_occupied = scan.tail_occupied;
  }
  Json kept = Json::array();
  for (auto& b : prev_block["blocks"]) {
    if (TypeOf(b) != "table_footnote") kept.push_back(b);
  }
  prev_block["blocks"] = std::move(kept);
  Json* body = BodyBlock(prev_block);
  const Json body_index = body ? body->value("index", Json()) : Json();
  for (size_t k = 0; k < footnotes.size(); ++k) {
    Json f = footnotes[k];
    f["cross_page"] = true;
    if (body_index.is_number_integer())
      f["index"] = body_index.get<long long>() + static_cast<long long>(k + 1);
    else
      f = [&] {
        Json g = Json::object();
        for (auto it = f.begin(); it != f.end(); ++it)
          if (it.key() != "index") g[it.key()] = it.value();
        return g;
      }();
    prev_block["blocks"].push_back(std::move(f));
  }
  prev.dirty = true;
}

struct Restore {
  size_t page;
  std::vector<Json> blocks;  // inserted after the page's first para block
};

}  // namespace

// merge_table over all pages (last to first). Restored post-table captions are inserted after the
// merges so that block positions stay valid while states refer to them.
void MergeTablesV34(Json& pdf_info) {
  std::map<std::pair<size_t, size_t>, TableState> states;  // (page, para position)
  std::set<std::pair<size_t, size_t>> merged_away;
  std::vector<Restore> restores;
  auto state_of = [&](size_t page, size_t pos) -> TableState* {
    const auto key = std::make_pair(page, pos);
    auto it = states.find(key);
    if (it != states.end()) return &it->second;
    Json* span = BodySpan(pdf_info[page]["para_blocks"][pos]);
    if (!span) return nullptr;
    auto st =
        BuildTableState(span->value("html", Json("")).is_string() ? (*span)["html"].get<std::string>() : "");
    if (!st) return nullptr;
    return &states.emplace(key, std::move(*st)).first->second;
  };
  for (size_t p = pdf_info.size(); p-- > 1;) {
    Json& paras = pdf_info[p]["para_blocks"];
    Json& prev_paras = pdf_info[p - 1]["para_blocks"];
    if (paras.empty() || TypeOf(paras[0]) != "table" || prev_paras.empty() ||
        TypeOf(prev_paras.back()) != "table")
      continue;
    Json& cur = paras[0];
    Json& prev = prev_paras.back();
    TableState* cs = state_of(p, 0);
    TableState* ps = state_of(p - 1, prev_paras.size() - 1);
    if (!cs || !ps) continue;
    std::vector<size_t> post_caps;
    std::vector<Json> footnotes;
    for (size_t i = 0; i < cur["blocks"].size(); ++i) {
      Json& b = cur["blocks"][i];
      if (TypeOf(b) == "table_caption" && IsPostTableNonContinuationCaption(cur, b)) post_caps.push_back(i);
      if (TypeOf(b) == "table_footnote") footnotes.push_back(b);
    }
    if (!CanMergeTables(cur, prev, *cs, *ps)) continue;
    PerformMerge(*ps, *cs, prev, cur, footnotes);
    if (!post_caps.empty()) {
      Restore r{p, {}};
      Json kept = Json::array();
      for (size_t i = 0; i < cur["blocks"].size(); ++i) {
        if (std::find(post_caps.begin(), post_caps.end(), i) == post_caps.end()) {
          kept.push_back(cur["blocks"][i]);
          continue;
        }
        Json t = cur["blocks"][i];
        t["type"] = "text";
        r.blocks.push_back(std::move(t));
      }
      cur["blocks"] = std::move(kept);
      restores.push_back(std::move(r));
    }
    merged_away.insert({p, 0});
    for (auto& b : cur["blocks"]) {
      b["lines"] = Json::array();
      b["lines_deleted"] = true;
    }
  }
  for (auto& [key, st] : states) {
    if (!st.dirty || merged_away.count(key)) continue;
    Json* span = BodySpan(pdf_info[key.first]["para_blocks"][key.second]);
    if (span) (*span)["html"] = html::Serialize(*st.soup);
  }
  for (auto& r : restores) {
    Json& paras = pdf_info[r.page]["para_blocks"];
    Json out = Json::array();
    out.push_back(paras[0]);
    for (auto& b : r.blocks) out.push_back(std::move(b));
    for (size_t i = 1; i < paras.size(); ++i) out.push_back(paras[i]);
    paras = std::move(out);
  }
}

}  // namespace mineru::pipeline::v34
