// pipeline/write/mineru_3_4/visual_group.cc — regroup_visual_blocks of MinerU 3.4.4
// (utils/visual_magic_model_utils.py): image_block absorption, caption/footnote parent search,
// two-layer group objects.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>

#include "pipeline/common/box_relations.h"
#include "pipeline/write/mineru_3_4/visual.h"

namespace mineru::pipeline::v34 {

namespace {

std::string TypeOf(const Json& b) { return b.value("type", std::string()); }
int IndexOf(const Json& b) { return b.value("index", 0); }
IBox BoxOf(const Json& b) {
  const Json& j = b["bbox"];
  return {j[0].get<int>(), j[1].get<int>(), j[2].get<int>(), j[3].get<int>()};
}
bool IsMainType(const std::string& t) {
  return t == "image_body" || t == kImageBlockBody || t == "table_body" || t == "chart_body" ||
         t == "code_body";
}
bool IsChildType(const std::string& t) { return t == "caption" || t == "footnote"; }
int KindOf(const std::string& t) {
  if (t == "table_body") return 1;
  if (t == "chart_body") return 2;
  if (t == "code_body") return 3;
  return 0;
}
const char* const kKinds[4] = {"image", "table", "chart", "code"};

double Round3(double v) {  // round(min(max(v, 0), 1), 3)
  v = std::min(std::max(v, 0.0), 1.0);
  return std::nearbyint(v * 1000.0) / 1000.0;
}

bool IsTransparent(const Json& b) {
  if (TypeOf(b) != "list") return false;
  const auto kids = b.find("blocks");
  if (kids != b.end() && !kids->empty()) return false;
  const auto lines = b.find("lines");
  if (lines == b.end()) return true;
  std::string text;
  for (const auto& line : *lines) {
    for (const auto& s : line["spans"]) {
      if (s.contains("content") && s["content"].is_string()) text += s["content"].get<std::string>();
    }
  }
  return text.find_first_not_of(" \t\n\r\f\v") == std::string::npos;
}

// absorb_image_block_members: member position -> parent position; sub_images per parent position.
struct Absorption {
  std::map<size_t, size_t> parent_of;
  std::map<size_t, Json> sub_images;
};

Absorption AbsorbImageBlockMembers(const std::vector<Json>& blocks) {
  Absorption a;
  for (size_t m = 0; m < blocks.size(); ++m) {
    const std::string t = TypeOf(blocks[m]);
    if (t != "image_body" && t != "chart_body") continue;
    std::optional<std::tuple<double, long long, int>> best;
    size_t best_parent = 0;
    for (size_t p = 0; p < blocks.size(); ++p) {
      if (TypeOf(blocks[p]) != kImageBlockBody) continue;
      const IBox pb = BoxOf(blocks[p]);
      const double ratio = OverlapInFirstRatio(BoxOf(blocks[m]), pb);
      if (ratio < 0.9) continue;
      const long long area = static_cast<long long>(std::max(0, pb[2] - pb[0])) * std::max(0, pb[3] - pb[1]);
      const auto key = std::make_tuple(-ratio, area, IndexOf(blocks[p]));
      if (!best || key < *best) {
        best = key;
        best_parent = p;
      }
    }
    if (best) a.parent_of[m] = best_parent;
  }
  for (const auto& [m, p] : a.parent_of) {  // member positions ascending = index order
    const IBox mb = BoxOf(blocks[m]), pb = BoxOf(blocks[p]);
    const double w = std::max(pb[2] - pb[0], 1), h = std::max(pb[3] - pb[1], 1);
    Json sub = Json::object();
    sub["type"] = TypeOf(blocks[m]) == "chart_body" ? "chart" : "image";
    sub["bbox"] = Json::array({Round3((mb[0] - pb[0]) / w), Round3((mb[1] - pb[1]) / h),
                               Round3((mb[2] - pb[0]) / w), Round3((mb[3] - pb[1]) / h)});
    if (!a.sub_images.count(p)) a.sub_images[p] = Json::array();
    a.sub_images[p].push_back(std::move(sub));
  }
  return a;
}

bool Overlap2D(const IBox& a, const IBox& b) {
  return !(a[2] <= b[0] || a[0] >= b[2] || a[3] <= b[1] || a[1] >= b[3]);
}

// is_block_outside_visual_gap
bool OutsideVisualGap(const IBox& between, const IBox& child, const IBox& main) {
  int gap_top, gap_bottom;
  if (child[3] <= main[1]) {
    gap_top = child[3];
    gap_bottom = main[1];
  } else if (main[3] <= child[1]) {
    gap_top = main[3];
    gap_bottom = child[1];
  } else {
    return false;
  }
  if (Overlap2D(between, child) || Overlap2D(between, main)) return false;
  return !(between[1] < gap_bottom && between[3] > gap_top);
}

// Blocks of the visual relation (effective, non-transparent), in index order.
struct Relation {
  const std::vector<Json>& blocks;
  std::vector<size_t> order;  // positions into blocks
  std::map<int, size_t> pos_by_index;
};

bool IsVisualNeighbor(const Relation& r, size_t child, size_t main) {
  const std::string ct = TypeOf(r.blocks[child]);
  if (ct == "footnote" && IndexOf(r.blocks[child]) < IndexOf(r.blocks[main])) return false;
  const size_t cp = r.pos_by_index.at(IndexOf(r.blocks[child])),
               mp = r.pos_by_index.at(IndexOf(r.blocks[main]));
  for (size_t pos = std::min(cp, mp) + 1; pos < std::max(cp, mp); ++pos) {
    const Json& b = r.blocks[r.order[pos]];
    const std::string bt = TypeOf(b);
    if (bt == "caption" || (ct != "caption" && bt == "footnote")) continue;
    if (OutsideVisualGap(BoxOf(b), BoxOf(r.blocks[child]), BoxOf(r.blocks[main]))) continue;
    return false;
  }
  return true;
}

long EffectiveIndexDiff(const Relation& r, size_t child, size_t main) {
  const std::string ct = TypeOf(r.blocks[child]);
  const size_t cp = r.pos_by_index.at(IndexOf(r.blocks[child])),
               mp = r.pos_by_index.at(IndexOf(r.blocks[main]));
  const size_t s = std::min(cp, mp), e = std::max(cp, mp);
  long skipped = 0;
  for (size_t pos = s + 1; pos < e; ++pos) skipped += TypeOf(r.blocks[r.order[pos]]) == ct;
  return static_cast<long>(e - s) - skipped;
}

double CenterDistance(const IBox& a, const IBox& b) {
  const double dx = (a[0] + a[2]) / 2.0 - (b[0] + b[2]) / 2.0, dy = (a[1] + a[3]) / 2.0 - (b[1] + b[3]) / 2.0;
  return std::sqrt(dx * dx + dy * dy);
}

std::optional<size_t> FindBestParent(const Relation& r, size_t child, const std::vector<size_t>& mains) {
  std::vector<size_t> cands;
  for (size_t m : mains) {
    if (IsVisualNeighbor(r, child, m)) cands.push_back(m);
  }
  if (cands.empty()) return std::nullopt;
  long best = EffectiveIndexDiff(r, child, cands[0]);
  for (size_t m : cands) best = std::min(best, EffectiveIndexDiff(r, child, m));
  std::vector<size_t> close;
  for (size_t m : cands) {
    if (EffectiveIndexDiff(r, child, m) == best) close.push_back(m);
  }
  if (close.size() == 1) return close[0];
  const IBox cb = BoxOf(r.blocks[child]);
  double lo = 1e300, hi = -1e300;
  for (size_t m : close) {
    const double d = BoxDistance(cb, BoxOf(r.blocks[m]));
    lo = std::min(lo, d);
    hi = std::max(hi, d);
  }
  auto min_by = [&](auto key) {
    return *std::min_element(close.begin(), close.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
  };
  if (hi - lo > 2) {
    return min_by(
        [&](size_t m) { return std::make_pair(BoxDistance(cb, BoxOf(r.blocks[m])), IndexOf(r.blocks[m])); });
  }
  const std::string ct = TypeOf(r.blocks[child]);
  const bool all_tables =
      std::all_of(close.begin(), close.end(), [&](size_t m) { return TypeOf(r.blocks[m]) == "table_body"; });
  if (ct == "caption" && all_tables) {
    return *std::max_element(close.begin(), close.end(),
                             [&](size_t a, size_t b) { return IndexOf(r.blocks[a]) < IndexOf(r.blocks[b]); });
  }
  if (ct == "footnote") return min_by([&](size_t m) { return IndexOf(r.blocks[m]); });
  return min_by(
      [&](size_t m) { return std::make_pair(CenterDistance(cb, BoxOf(r.blocks[m])), IndexOf(r.blocks[m])); });
}

Json WithoutKeys(const Json& obj, std::initializer_list<const char*> keys) {
  Json out = Json::object();
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool drop = false;
    for (const char* k : keys) drop = drop || it.key() == k;
    if (!drop) out[it.key()] = it.value();
  }
  return out;
}

Json BuildGroup(const Json& main, const Json* sub_images, std::vector<const Json*> children) {
  const int kind = KindOf(TypeOf(main));
  const std::string k = kKinds[kind];
  Json body = WithoutKeys(main, {"sub_images", "sub_type"});
  body["type"] = k + "_body";
  std::stable_sort(children.begin(), children.end(),
                   [](const Json* a, const Json* b) { return IndexOf(*a) < IndexOf(*b); });
  std::vector<Json> members = {body};
  for (const Json* c : children) {
    Json cj = *c;
    cj["type"] = k + (TypeOf(*c) == "caption" ? "_caption" : "_footnote");
    members.push_back(std::move(cj));
  }
  std::stable_sort(members.begin(), members.end(),
                   [](const Json& a, const Json& b) { return IndexOf(a) < IndexOf(b); });
  Json g = Json::object();
  g["type"] = k;
  g["bbox"] = body["bbox"];
  g["blocks"] = Json(members);
  g["index"] = body["index"];
  const auto st = main.find("sub_type");
  if ((kind == 0 || kind == 2) && st != main.end() && st->is_string() && !st->get<std::string>().empty()) {
    g["sub_type"] = *st;
  }
  if (kind == 0 && sub_images && !sub_images->empty()) g["sub_images"] = *sub_images;
  const auto cm = main.find("cell_merge");
  if (kind == 1 && cm != main.end() && !cm->is_null() && !cm->empty()) g["cell_merge"] = *cm;
  return g;
}

}  // namespace

VisualGroups RegroupVisualBlocks(const std::vector<Json>& blocks) {
  const Absorption ab = AbsorbImageBlockMembers(blocks);
  Relation r{blocks, {}, {}};
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (ab.parent_of.count(i) || IsTransparent(blocks[i])) continue;
    r.pos_by_index[IndexOf(blocks[i])] = r.order.size();
    r.order.push_back(i);
  }
  std::vector<size_t> mains, children;
  for (size_t i : r.order) {
    if (IsMainType(TypeOf(blocks[i]))) mains.push_back(i);
    if (IsChildType(TypeOf(blocks[i]))) children.push_back(i);
  }
  VisualGroups out;
  std::map<size_t, std::vector<const Json*>> kids;
  for (size_t c : children) {
    const auto parent = FindBestParent(r, c, mains);
    if (!parent) {
      out.unmatched.push_back(c);
      continue;
    }
    kids[*parent].push_back(&blocks[c]);
  }
  for (size_t m : mains) {
    const auto si = ab.sub_images.find(m);
    out.groups[KindOf(TypeOf(blocks[m]))].push_back(
        BuildGroup(blocks[m], si == ab.sub_images.end() ? nullptr : &si->second, kids[m]));
  }
  return out;
}

}  // namespace mineru::pipeline::v34
