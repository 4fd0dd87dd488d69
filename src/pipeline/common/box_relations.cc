// pipeline/common/box_relations.cc — MinerU box helpers and caption matching (see box_relations.h).
#include "pipeline/common/box_relations.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

namespace mineru::pipeline {

bool BoxIsIn(const IBox& a, const IBox& b) {
  return a[0] >= b[0] && a[1] >= b[1] && a[2] <= b[2] && a[3] <= b[3];
}

double BoxDistance(const IBox& b1, const IBox& b2) {
  const double x1 = b1[0], y1 = b1[1], x1b = b1[2], y1b = b1[3];
  const double x2 = b2[0], y2 = b2[1], x2b = b2[2], y2b = b2[3];
  auto dist = [](double ax, double ay, double bx, double by) {
    return std::sqrt((ax - bx) * (ax - bx) + (ay - by) * (ay - by));
  };
  const bool left = x2b < x1;
  const bool right = x1b < x2;
  const bool bottom = y2b < y1;
  const bool top = y1b < y2;
  if (top && left) return dist(x1, y1b, x2b, y2);
  if (left && bottom) return dist(x1, y1, x2b, y2b);
  if (bottom && right) return dist(x1b, y1, x2, y2b);
  if (right && top) return dist(x1b, y1b, x2, y2);
  if (left) return x1 - x2b;
  if (right) return x2 - x1b;
  if (bottom) return y1 - y2b;
  if (top) return y2 - y1b;
  return 0.0;
}

double OverlapInFirstRatio(const IBox& a, const IBox& b) {
  const int xl = std::max(a[0], b[0]);
  const int yt = std::max(a[1], b[1]);
  const int xr = std::min(a[2], b[2]);
  const int yb = std::min(a[3], b[3]);
  if (xr < xl || yb < yt) return 0.0;
  const double inter = static_cast<double>(xr - xl) * static_cast<double>(yb - yt);
  const double area = static_cast<double>(a[2] - a[0]) * static_cast<double>(a[3] - a[1]);
  if (area == 0) return 0.0;
  return inter / area;
}

std::vector<size_t> ReductOverlap(const std::vector<IBox>& boxes) {
  std::vector<size_t> keep;
  for (size_t i = 0; i < boxes.size(); ++i) {
    bool inside = false;
    for (size_t j = 0; j < boxes.size() && !inside; ++j) {
      if (i != j && BoxIsIn(boxes[i], boxes[j])) inside = true;
    }
    if (!inside) keep.push_back(i);
  }
  return keep;
}

namespace {

void SortByOrigin(std::vector<IBox>& boxes, std::vector<size_t>& ids) {
  std::vector<size_t> order(boxes.size());
  std::iota(order.begin(), order.end(), 0);
  auto key = [&](size_t i) {
    return static_cast<long long>(boxes[i][0]) * boxes[i][0] +
           static_cast<long long>(boxes[i][1]) * boxes[i][1];
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
  std::vector<IBox> sb;
  std::vector<size_t> si;
  for (size_t o : order) {
    sb.push_back(boxes[o]);
    si.push_back(ids[o]);
  }
  boxes = std::move(sb);
  ids = std::move(si);
}

constexpr size_t kObjOffset = 10000;

// One box of TieUp's joint candidate list.
struct Cand {
  size_t idx;  // subject index, or object index + kObjOffset
  int kind;    // 0 subject, 1 object
  int x0, y0;
};

// tie_up_category_by_distance_v3's bookkeeping over the sorted subjects and objects.
struct TieUpState {
  const std::vector<IBox>& subjects;
  const std::vector<IBox>& objects;
  std::vector<TieUpResult> ret{};
  std::set<size_t> seen_idx{};  // Cand::idx values taken (subjects also by plain index in phase 2)
  std::set<size_t> seen_sub{};  // subjects with a result

  const IBox& BoxOf(const Cand& c) const {
    return c.kind == 0 ? subjects[c.idx] : objects[c.idx - kObjOffset];
  }

  // Among the unseen candidates: the one nearest the top-left corner of them all (by x0, y0), and
  // the box of the other kind nearest to it. False when either is missing.
  bool NextPair(const std::vector<Cand>& all, size_t* sub_idx, size_t* obj_idx) const {
    std::vector<Cand> cands;
    for (const auto& c : all) {
      if (!seen_idx.count(c.idx)) cands.push_back(c);
    }
    if (cands.empty()) return false;
    int left_x = cands[0].x0, top_y = cands[0].y0;
    for (const auto& c : cands) {
      left_x = std::min(left_x, c.x0);
      top_y = std::min(top_y, c.y0);
    }
    std::stable_sort(cands.begin(), cands.end(), [&](const Cand& a, const Cand& b) {
      const long long da = 1LL * (a.x0 - left_x) * (a.x0 - left_x) + 1LL * (a.y0 - top_y) * (a.y0 - top_y);
      const long long db = 1LL * (b.x0 - left_x) * (b.x0 - left_x) + 1LL * (b.y0 - top_y) * (b.y0 - top_y);
      return da < db;
    });
    const Cand fst = cands[0];
    const IBox fst_box = BoxOf(fst);
    std::stable_sort(cands.begin(), cands.end(), [&](const Cand& a, const Cand& b) {
      return BoxDistance(fst_box, BoxOf(a)) < BoxDistance(fst_box, BoxOf(b));
    });
    const Cand* nxt = nullptr;
    for (size_t i = 1; i < cands.size(); ++i) {
      if ((cands[i].kind ^ fst.kind) == 1) {
        nxt = &cands[i];
        break;
      }
    }
    if (!nxt) return false;
    if (fst.kind == 0) {
      *sub_idx = fst.idx;
      *obj_idx = nxt->idx - kObjOffset;
    } else {
      *sub_idx = nxt->idx;
      *obj_idx = fst.idx - kObjOffset;
    }
    return true;
  }

  // Phase 1: pairs taken greedily from the top-left; a pair far worse (3x) than the object's
  // nearest subject is skipped and its subject set aside.
  void PairGreedily(const std::vector<Cand>& all) {
    const size_t n = subjects.size();
    while (n > seen_sub.size()) {
      size_t sub_idx, obj_idx;
      if (!NextPair(all, &sub_idx, &obj_idx)) break;
      const double pair_dis = BoxDistance(subjects[sub_idx], objects[obj_idx]);
      double nearest = std::numeric_limits<double>::infinity();
      for (size_t i = 0; i < n; ++i) nearest = std::min(nearest, BoxDistance(subjects[i], objects[obj_idx]));
      if (pair_dis >= 3 * nearest) {
        seen_idx.insert(sub_idx);
        continue;
      }
      seen_idx.insert(sub_idx);
      seen_idx.insert(obj_idx + kObjOffset);
      seen_sub.insert(sub_idx);
      ret.push_back(TieUpResult{sub_idx, {obj_idx}});
    }
  }

  // Phase 2: every object still unpaired joins its nearest subject (a new result if that subject
  // has none yet).
  void AttachLeftoverObjects() {
    const size_t n = subjects.size(), m = objects.size();
    for (size_t i = 0; i < m; ++i) {
      const size_t j = i + kObjOffset;
      if (seen_idx.count(j)) continue;
      seen_idx.insert(j);
      double nearest = std::numeric_limits<double>::infinity();
      long long nearest_sub = -1;
      for (size_t k = 0; k < n; ++k) {
        const double dis = BoxDistance(objects[i], subjects[k]);
        if (dis < nearest) {
          nearest = dis;
          nearest_sub = static_cast<long long>(k);
        }
      }
      if (nearest_sub < 0) continue;
      const size_t k = static_cast<size_t>(nearest_sub);
      if (seen_sub.count(k)) {
        for (auto& r : ret) {
          if (r.sub == k) {
            r.objects.push_back(i);
            break;
          }
        }
      } else {
        ret.push_back(TieUpResult{k, {i}});
      }
      seen_sub.insert(k);
      seen_idx.insert(k);
    }
  }
};

}  // namespace

std::vector<TieUpResult> TieUp(std::vector<IBox>& subjects, std::vector<size_t>& subject_ids,
                               std::vector<IBox>& objects, std::vector<size_t>& object_ids) {
  SortByOrigin(subjects, subject_ids);
  SortByOrigin(objects, object_ids);
  const size_t n = subjects.size(), m = objects.size();
  std::vector<Cand> all;
  for (size_t i = 0; i < n; ++i) all.push_back({i, 0, subjects[i][0], subjects[i][1]});
  for (size_t i = 0; i < m; ++i) all.push_back({i + kObjOffset, 1, objects[i][0], objects[i][1]});

  TieUpState st{subjects, objects};
  st.PairGreedily(all);
  st.AttachLeftoverObjects();
  for (size_t i = 0; i < n; ++i) {
    if (!st.seen_sub.count(i)) st.ret.push_back(TieUpResult{i, {}});
  }
  return std::move(st.ret);
}

}  // namespace mineru::pipeline
