// pipeline/write/mineru_4/middle2.cc — Middle JSON 2.0 pages from the document model (see middle2.h).
#include "pipeline/write/mineru_4/middle2.h"

#include <cmath>
#include <map>
#include <optional>
#include <utility>

#include "pipeline/common/box_relations.h"
#include "pipeline/common/code_language.h"
#include "pipeline/common/formula.h"
#include "pipeline/common/magic_model.h"

namespace mineru::pipeline::mineru4 {
namespace {

// The 2.0 block a model type becomes ("" = no block of its own).
std::string MappedType(const std::string& t) {
  static const std::map<std::string, std::string> kMap = {
      {"text", "text"},
      {"ref_text", "ref_text"},
      {"header", "header"},
      {"footer", "footer"},
      {"page_number", "page_number"},
      {"aside_text", "aside_text"},
      {"page_footnote", "page_footnote"},
      {"doc_title", "doc_title"},
      {"paragraph_title", "paragraph_title"},
      {"title", "doc_title"},  // the 2509 checkpoint's one title type: "#" in MinerU 2.5.4 and 3.4.4
      {"equation", "equation"},
      {"table", "table"},
      {"image", "image"},
      {"chart", "chart"},
      {"code", "code"},
      {"algorithm", "code"},
      {"list", "list"},
      {"index", "index"},
      {"image_block", ""},
      {"equation_block", ""},
  };
  const auto it = kMap.find(t);
  return it != kMap.end() ? it->second : "text";  // list_item, formula_number, phonetic, unknown, ...
}

// Which visual family an annotation type belongs to, and whether it is a caption or a footnote.
struct Annotation {
  std::string family;  // "table", "image" (images and charts) or "code"; "" for anything else
  bool caption = true;
};

Annotation AnnotationOf(const std::string& t) {
  if (t == "table_caption") return {"table", true};
  if (t == "table_footnote") return {"table", false};
  if (t == "image_caption") return {"image", true};
  if (t == "image_footnote") return {"image", false};
  if (t == "code_caption") return {"code", true};
  return {"", true};
}

std::string FamilyOf(const std::string& mapped) {
  if (mapped == "table") return "table";
  if (mapped == "image" || mapped == "chart") return "image";
  if (mapped == "code") return "code";
  return "";
}

double Round3(double v) { return std::round(v * 1000.0) / 1000.0; }

Json Bbox(const ContentBlock& b) {
  return Json::array({Round3(b.bbox[0]), Round3(b.bbox[1]), Round3(b.bbox[2]), Round3(b.bbox[3])});
}

// The block's box in PDF points, outward-rounded (crops and the caption matcher work in points).
IBox PointBox(const ContentBlock& b, const PageInput& page) {
  return {static_cast<int>(std::floor(b.bbox[0] * page.width_pt)),
          static_cast<int>(std::floor(b.bbox[1] * page.height_pt)),
          static_cast<int>(std::ceil(b.bbox[2] * page.width_pt)),
          static_cast<int>(std::ceil(b.bbox[3] * page.height_pt))};
}

// The file name of a crop of the block (saved by image_path), or nullopt.
std::optional<std::string> CropOf(const ContentBlock& b, const PageInput& page, const char* span_type,
                                  const ImagePathFn& image_path) {
  const IBox box = PointBox(b, page);
  if (!image_path || box[0] >= box[2] || box[1] >= box[3]) return std::nullopt;
  CropRequest req;
  req.span_type = span_type;
  req.page_idx = page.page_idx;
  req.round_out = true;
  for (int k = 0; k < 4; ++k) req.bbox[k] = box[k];
  std::string name = image_path(req);
  if (name.empty()) return std::nullopt;
  return "images/" + name;
}

Json SpanBlock(const std::string& type, const ContentBlock& b) {
  Json j = Json::object();
  j["type"] = type;
  j["bbox"] = Bbox(b);
  j["content"] = Spans(b.content);
  if (type == "doc_title") j["level"] = 1;
  if (type == "paragraph_title") j["level"] = 2;
  if ((type == "text" || type == "ref_text") && b.merge_prev.value_or(false)) j["continues_prev"] = true;
  return j;
}

Json BodyBlock(const std::string& type, const ContentBlock& b, std::string content,
               const std::optional<std::string>& image) {
  Json j = {{"type", type}, {"bbox", Bbox(b)}, {"content", std::move(content)}};
  if (image) j["image_path"] = *image;
  return j;
}

// An annotation attached to a visual block: its family's caption / footnote type.
Json AnnotationBlock(const std::string& body_type, bool caption, const ContentBlock& b) {
  const std::string family = body_type.substr(0, body_type.find('_'));
  return {{"type", family + (caption ? "_caption" : "_footnote")},
          {"bbox", Bbox(b)},
          {"content", Spans(b.content)}};
}

// A page under construction: which blocks are attached to which, and which are taken.
struct PageBuild {
  PageBuild(const PageInput& p, const ImagePathFn& f) : page(p), image_path(f) {
    for (const ContentBlock& b : page.blocks) mapped.push_back(MappedType(b.type));
    taken.assign(page.blocks.size(), false);
  }
  const PageInput& page;
  const ImagePathFn& image_path;
  std::vector<std::string> mapped;                                     // per block: its 2.0 type ("" = none)
  std::vector<bool> taken;                                             // attached to another block
  std::map<size_t, std::vector<std::pair<size_t, bool>>> annotations;  // visual -> (block, is caption)
  std::map<size_t, std::vector<size_t>> items;                         // list -> its items
};

// Captions and footnotes to the nearest visual of their family (tie_up_category_by_distance_v3).
void AttachAnnotations(PageBuild& pb) {
  const std::vector<ContentBlock>& blocks = pb.page.blocks;
  for (const char* family : {"table", "image", "code"}) {
    for (const bool caption : {true, false}) {
      std::vector<IBox> subjects, objects;
      std::vector<size_t> subject_ids, object_ids;
      for (size_t i = 0; i < blocks.size(); ++i) {
        const Annotation a = AnnotationOf(blocks[i].type);
        if (FamilyOf(pb.mapped[i]) == family) {
          subjects.push_back(PointBox(blocks[i], pb.page));
          subject_ids.push_back(i);
        } else if (a.family == family && a.caption == caption) {
          objects.push_back(PointBox(blocks[i], pb.page));
          object_ids.push_back(i);
        }
      }
      if (subjects.empty() || objects.empty()) continue;
      for (const TieUpResult& r : TieUp(subjects, subject_ids, objects, object_ids)) {
        for (size_t o : r.objects) {
          pb.annotations[subject_ids[r.sub]].emplace_back(object_ids[o], caption);
          pb.taken[object_ids[o]] = true;
        }
      }
    }
  }
}

// Text blocks (at least 0.9 inside a list block) become the list's items.
void CollectListItems(PageBuild& pb) {
  const std::vector<ContentBlock>& blocks = pb.page.blocks;
  for (size_t l = 0; l < blocks.size(); ++l) {
    if (pb.mapped[l] != "list") continue;
    for (size_t i = 0; i < blocks.size(); ++i) {
      const bool texty = pb.mapped[i] == "text" || pb.mapped[i] == "ref_text";
      if (i == l || pb.taken[i] || !texty || BboxCoverRatio(blocks[l].bbox, blocks[i].bbox) <= 0.9) continue;
      pb.items[l].push_back(i);
      pb.taken[i] = true;
    }
  }
}

// The body of a visual block (table_body, image_body, chart_body, code_body or algorithm_body).
Json VisualBody(const PageBuild& pb, size_t i) {
  const ContentBlock& b = pb.page.blocks[i];
  const std::string& type = pb.mapped[i];
  const std::string content = b.content.value_or("");
  if (type == "code") {
    if (b.type == "algorithm")
      return {{"type", "algorithm_body"}, {"bbox", Bbox(b)}, {"content", Spans(b.content)}};
    return BodyBlock("code_body", b, detail::CodeContentClean(b.content), std::nullopt);
  }
  const char* span = type == "table" ? "table" : type == "chart" ? "chart" : "image";
  return BodyBlock(type + "_body", b, content, CropOf(b, pb.page, span, pb.image_path));
}

// image / table / chart / code: {type, bbox, content: [captions..., body, footnotes...], extras}.
Json VisualBlock(const PageBuild& pb, size_t i) {
  const ContentBlock& b = pb.page.blocks[i];
  const std::string& type = pb.mapped[i];
  Json body = VisualBody(pb, i);
  const std::string body_type = body["type"];
  Json content = Json::array();
  const auto it = pb.annotations.find(i);
  for (const bool caption : {true, false}) {
    if (!caption) content.push_back(std::move(body));
    if (it == pb.annotations.end()) continue;
    for (const auto& [k, is_caption] : it->second) {
      if (is_caption == caption) content.push_back(AnnotationBlock(body_type, caption, pb.page.blocks[k]));
    }
  }
  Json j = {{"type", type}, {"bbox", Bbox(b)}, {"content", std::move(content)}};
  if (type == "code") {
    j["sub_type"] = b.type == "algorithm" ? "algorithm" : "code";
    if (b.type != "algorithm") j["guess_lang"] = GuessCodeLanguage(detail::CodeContentClean(b.content));
  } else if ((type == "image" || type == "chart") && b.sub_type) {
    j["sub_type"] = *b.sub_type;
  } else if (type == "table" && b.cell_merge) {
    j["continues_prev"] = true;
    j["cell_merge"] = *b.cell_merge;
  }
  return j;
}

Json OneBlock(const PageBuild& pb, size_t i) {
  const ContentBlock& b = pb.page.blocks[i];
  const std::string& type = pb.mapped[i];
  if (!FamilyOf(type).empty()) return VisualBlock(pb, i);
  if (type == "equation") {
    const std::string latex = detail::IsolatedFormulaClean(b.content.value_or(""));
    Json j = {{"type", "equation"}, {"bbox", Bbox(b)}, {"content", latex}};
    if (auto crop = CropOf(b, pb.page, "interline_equation", pb.image_path)) j["image_path"] = *crop;
    return j;
  }
  if (type == "list" || type == "index") {
    Json items = Json::array();
    bool all_refs = true;
    const auto it = pb.items.find(i);
    if (it != pb.items.end()) {
      for (size_t k : it->second) {
        items.push_back(SpanBlock(pb.mapped[k], pb.page.blocks[k]));
        all_refs = all_refs && pb.mapped[k] == "ref_text";
      }
    }
    if (type == "index" && b.content && !b.content->empty()) items.push_back(SpanBlock("text", b));
    Json j = {{"type", type}, {"bbox", Bbox(b)}, {"content", std::move(items)}};
    if (type == "list") j["sub_type"] = all_refs && !items.empty() ? "ref_text" : "text";
    return j;
  }
  return SpanBlock(type, b);
}

}  // namespace

Json Spans(const std::optional<std::string>& content) {
  Json out = Json::array();
  for (const Json& s : detail::TextSpans(IBox{0, 0, 0, 0}, "text", content)) {
    const std::string text = s.value("content", std::string());
    if (text.empty()) continue;
    const bool eq = s.value("type", std::string()) == "inline_equation";
    out.push_back({{"type", eq ? "equation_inline" : "text"}, {"content", text}});
  }
  return out;
}

}  // namespace mineru::pipeline::mineru4

namespace mineru::pipeline::mineru4 {

Json MiddlePage(const PageInput& page, const ImagePathFn& image_path) {
  PageBuild pb(page, image_path);
  AttachAnnotations(pb);
  CollectListItems(pb);
  Json blocks = Json::array();
  int index = 0;
  for (size_t i = 0; i < page.blocks.size(); ++i) {
    if (pb.taken[i] || pb.mapped[i].empty()) continue;
    Json j = OneBlock(pb, i);
    j["index"] = index++;
    blocks.push_back(std::move(j));
  }
  return {{"page_idx", page.page_idx}, {"blocks", std::move(blocks)}};
}

Json MiddleEnvelope(std::vector<Json> pages, const EnvelopeInfo& info) {
  Json j = Json::object();
  j["schema"] = "docvortex.middle";
  j["schema_version"] = "2.0";
  j["metadata"] = {{"file_suffix", info.file_suffix},
                   {"producer", {{"name", "mineru-cpp"}, {"version", info.producer_version}}}};
  j["extensions"] = {{"mineru", {{"tier", info.tier}, {"parse_mode", info.parse_mode}}}};
  j["is_full_document"] = info.full_document;
  j["pages"] = Json(std::move(pages));
  return j;
}

}  // namespace mineru::pipeline::mineru4
