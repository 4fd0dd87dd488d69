// pipeline/common/box_relations.h — MinerU's box geometry (utils/boxbase.py) and the caption/footnote
// matcher (utils/magic_model_utils.py: reduct_overlap, tie_up_category_by_distance_v3), on integer
// point boxes. Internal to the assembly.
#pragma once

#include <array>
#include <cstddef>
#include <vector>

namespace mineru::pipeline {

using IBox = std::array<int, 4>;  // x0, y0, x1, y1 in PDF points

// is_in: box1 entirely inside box2 (borders included).
bool BoxIsIn(const IBox& a, const IBox& b);

// bbox_distance: 0 when the boxes overlap or touch, else the gap (corner distance diagonally).
double BoxDistance(const IBox& a, const IBox& b);

// calculate_overlap_area_in_bbox1_area_ratio: intersection area / area of a.
double OverlapInFirstRatio(const IBox& a, const IBox& b);

// reduct_overlap: indices (into boxes) of the boxes not inside any other box (two equal boxes are
// inside each other, so both go).
std::vector<std::size_t> ReductOverlap(const std::vector<IBox>& boxes);

// One subject with the objects attached to it. Indices refer to the lists given to TieUp after its
// internal sort (see `subject_order` / `object_order`).
struct TieUpResult {
  std::size_t sub = 0;               // index into the sorted subjects
  std::vector<std::size_t> objects;  // indices into the sorted objects, in attachment order
};

// tie_up_category_by_distance_v3. `subjects`/`objects` are sorted in place (stably, by x0^2 + y0^2)
// together with their `*_ids` payloads; the results index the sorted lists.
std::vector<TieUpResult> TieUp(std::vector<IBox>& subjects, std::vector<std::size_t>& subject_ids,
                               std::vector<IBox>& objects, std::vector<std::size_t>& object_ids);

}  // namespace mineru::pipeline
