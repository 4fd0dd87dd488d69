// pipeline/doc/json.cc — MinerU's JSON dump and NAME_model.json (see json.h).
#include "pipeline/doc/json.h"

namespace mineru::pipeline {

namespace {

Json BboxJson(const double b[4]) { return Json::array({b[0], b[1], b[2], b[3]}); }

}  // namespace

Json ModelJson(const std::vector<std::vector<ContentBlock>>& pages) {
  Json out = Json::array();
  for (const auto& page : pages) {
    Json jp = Json::array();
    for (const auto& b : page) {
      Json jb = Json::object();
      jb["type"] = b.type;
      jb["bbox"] = BboxJson(b.bbox);
      jb["angle"] = b.angle ? Json(*b.angle) : Json(nullptr);
      jb["content"] = b.content ? Json(*b.content) : Json(nullptr);
      if (b.merge_prev) jb["merge_prev"] = *b.merge_prev;
      if (b.sub_type) jb["sub_type"] = *b.sub_type;
      if (b.cell_merge) jb["cell_merge"] = *b.cell_merge;
      jp.push_back(std::move(jb));
    }
    out.push_back(std::move(jp));
  }
  return out;
}

std::string DumpJson(const Json& j, int indent) {
  return j.dump(indent, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace);
}

}  // namespace mineru::pipeline
