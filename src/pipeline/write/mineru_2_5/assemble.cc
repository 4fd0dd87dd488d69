// pipeline/write/mineru_2_5/assemble.cc — MinerU 2.5.4 MagicModel + blocks_to_page_info +
// result_to_middle_json.
//
// The objects are built in the same order and with the same keys as the Python dicts, so the JSON
// written from them matches MinerU's middle.json key for key.
#include <algorithm>
#include <set>

#include "pipeline/common/box_relations.h"
#include "pipeline/common/code_language.h"
#include "pipeline/common/magic_model.h"
#include "pipeline/common/py_text.h"
#include "pipeline/write/mineru_2_5/assemble.h"

namespace mineru::pipeline {

namespace {

using namespace detail;

bool IsTextLike(const std::string& t) {
  static const std::set<std::string> kTypes = {
      "text",           "title",        "image_caption", "image_footnote", "table_caption",
      "table_footnote", "code_caption", "ref_text",      "phonetic",       "header",
      "footer",         "page_number",  "aside_text",    "page_footnote",  "list"};
  return kTypes.count(t) > 0;
}

// A block of the MagicModel with what the later steps need next to its JSON object.
struct MBlock {
  Json obj;  // {"bbox", "type", "angle", "lines", "index"} — possibly mutated later
  std::string type;
  IBox bbox;
  int index = 0;
};

// The {"bbox", "lines", "index", "angle"} dict that __tie_up_category_by_distance_v3 builds.
Json TieDict(const MBlock& b) {
  Json d = Json::object();
  d["bbox"] = b.obj["bbox"];
  d["lines"] = b.obj["lines"];
  d["index"] = b.index;
  d["angle"] = b.obj["angle"];
  return d;
}

// fix_two_layer_blocks for one kind ("image", "table", "code"). `blocks` holds the body, caption and
// footnote blocks of that kind in page order. Returns the two-layer blocks; `left_out` receives the
// blocks not placed in any group.
std::vector<MBlock> FixTwoLayerBlocks(const std::vector<MBlock>& blocks, const std::string& kind,
                                      std::vector<MBlock>& left_out) {
  const std::string body_t = kind + "_body", caption_t = kind + "_caption", footnote_t = kind + "_footnote";
  auto collect = [&](const std::string& type, std::vector<IBox>& boxes, std::vector<size_t>& ids) {
    std::vector<IBox> all;
    std::vector<size_t> all_ids;
    for (size_t i = 0; i < blocks.size(); ++i) {
      if (blocks[i].type == type) {
        all.push_back(blocks[i].bbox);
        all_ids.push_back(i);
      }
    }
    for (size_t k : ReductOverlap(all)) {
      boxes.push_back(all[k]);
      ids.push_back(all_ids[k]);
    }
  };
  // Two independent matchings (captions, footnotes), each on freshly collected lists.
  std::vector<IBox> sub_c, obj_c, sub_f, obj_f;
  std::vector<size_t> sub_c_ids, obj_c_ids, sub_f_ids, obj_f_ids;
  collect(body_t, sub_c, sub_c_ids);
  collect(caption_t, obj_c, obj_c_ids);
  collect(body_t, sub_f, sub_f_ids);
  collect(footnote_t, obj_f, obj_f_ids);
  const std::vector<TieUpResult> with_captions = TieUp(sub_c, sub_c_ids, obj_c, obj_c_ids);
  const std::vector<TieUpResult> with_footnotes = TieUp(sub_f, sub_f_ids, obj_f, obj_f_ids);

  std::vector<MBlock> fixed;
  std::set<int> processed;
  for (const auto& v : with_captions) {
    const MBlock& body = blocks[sub_c_ids[v.sub]];
    Json body_d = TieDict(body);
    body_d["type"] = body_t;
    Json group_blocks = Json::array({body_d});
    for (size_t o : v.objects) {
      const MBlock& cap = blocks[obj_c_ids[o]];
      Json d = TieDict(cap);
      d["type"] = caption_t;
      group_blocks.push_back(std::move(d));
      processed.insert(cap.index);
    }
    for (const auto& f : with_footnotes) {
      if (f.sub != v.sub) continue;  // same subject list order in both matchings
      for (size_t o : f.objects) {
        const MBlock& fn = blocks[obj_f_ids[o]];
        Json d = TieDict(fn);
        d["type"] = footnote_t;
        group_blocks.push_back(std::move(d));
        processed.insert(fn.index);
      }
      break;
    }
    processed.insert(body.index);
    MBlock group;
    group.obj = Json::object();
    group.obj["type"] = kind;
    group.obj["bbox"] = body.obj["bbox"];
    group.obj["blocks"] = std::move(group_blocks);
    group.obj["index"] = body.index;
    group.type = kind;
    group.bbox = body.bbox;
    group.index = body.index;
    fixed.push_back(std::move(group));
  }
  for (const auto& b : blocks) {
    if (!processed.count(b.index)) left_out.push_back(b);
  }
  return fixed;
}

// fix_list_blocks: lists collect the text / ref_text blocks that are >= 80% inside them (text blocks
// first, then ref_text, each in page order); empty lists disappear; sub_type is the most frequent
// child type (first seen wins ties).
void FixListBlocks(std::vector<MBlock>& lists, std::vector<MBlock>& texts, std::vector<MBlock>& refs) {
  std::vector<std::vector<const MBlock*>> children(lists.size());
  std::set<int> taken;
  auto scan = [&](const std::vector<MBlock>& cands) {
    for (const auto& b : cands) {
      for (size_t l = 0; l < lists.size(); ++l) {
        if (OverlapInFirstRatio(b.bbox, lists[l].bbox) >= 0.8) {
          children[l].push_back(&b);
          taken.insert(b.index);
          break;
        }
      }
    }
  };
  scan(texts);
  scan(refs);
  std::vector<MBlock> kept;
  for (size_t l = 0; l < lists.size(); ++l) {
    MBlock lb = lists[l];
    lb.obj = WithoutKey(lb.obj, "lines");
    Json kids = Json::array();
    std::vector<std::pair<std::string, int>> counts;  // insertion-ordered counter
    for (const MBlock* c : children[l]) {
      kids.push_back(c->obj);
      auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& p) { return p.first == c->type; });
      if (it == counts.end()) {
        counts.emplace_back(c->type, 1);
      } else {
        ++it->second;
      }
    }
    if (kids.empty()) continue;
    lb.obj["blocks"] = std::move(kids);
    auto best = counts.begin();
    for (auto it = counts.begin(); it != counts.end(); ++it) {
      if (it->second > best->second) best = it;
    }
    lb.obj["sub_type"] = best->first;
    kept.push_back(std::move(lb));
  }
  lists = std::move(kept);
  auto drop_taken = [&](std::vector<MBlock>& v) {
    v.erase(std::remove_if(v.begin(), v.end(), [&](const MBlock& b) { return taken.count(b.index) > 0; }),
            v.end());
  };
  drop_taken(texts);
  drop_taken(refs);
}

// The block's middle.json type and span type after MagicModel's renaming, and its cleaned content.
struct TypedBlock {
  std::string block_type;
  std::string span_type = "unknown";
  std::optional<std::string> content;
  std::optional<std::string> code_sub_type, guess_lang;  // set for code_body only
};

TypedBlock ClassifyBlock(const ContentBlock& info, const AssembleOptions& options) {
  TypedBlock t;
  t.block_type = info.type;
  t.content = info.content;
  if (IsTextLike(t.block_type)) {
    t.span_type = "text";
  } else if (t.block_type == "image") {
    t.block_type = "image_body";
    t.span_type = "image";
  } else if (t.block_type == "table") {
    t.block_type = "table_body";
    t.span_type = "table";
  } else if (t.block_type == "code" || t.block_type == "algorithm") {
    t.content = CodeContentClean(t.content);
    t.code_sub_type = t.block_type;
    t.block_type = "code_body";
    t.span_type = "text";
    t.guess_lang =
        options.guess_code_language ? options.guess_code_language(*t.content) : GuessCodeLanguage(*t.content);
  } else if (t.block_type == "equation") {
    t.block_type = "interline_equation";
    t.span_type = "interline_equation";
  }
  return t;
}

// The spans of one block's single line; crops are requested through options.image_path.
std::vector<Json> BlockSpans(const TypedBlock& t, const IBox& bb, int page_idx,
                             const AssembleOptions& options) {
  auto image_path = [&](const char* type) -> std::string {
    if (bb[0] >= bb[2] || bb[1] >= bb[3] || !options.image_path) return "";  // check_img_bbox
    CropRequest req;
    req.span_type = type;
    req.page_idx = page_idx;
    std::copy(bb.begin(), bb.end(), req.bbox);
    return options.image_path(req);
  };
  if (t.span_type == "image" || t.span_type == "table") {
    Json span = Json::object();
    span["bbox"] = BoxJson(bb);
    span["type"] = t.span_type;
    if (t.span_type == "table") span["html"] = t.content ? Json(*t.content) : Json(nullptr);
    span["image_path"] = image_path(t.span_type.c_str());
    return {std::move(span)};
  }
  if (t.span_type == "interline_equation") {
    Json span = Json::object();
    span["bbox"] = BoxJson(bb);
    span["type"] = t.span_type;
    // A None equation content would raise in MinerU; never happens for recognised equations.
    span["content"] = IsolatedFormulaClean(t.content.value_or(""));
    span["image_path"] = image_path("interline_equation");
    return {std::move(span)};
  }
  return TextSpans(bb, t.span_type.c_str(), t.content);
}

// page.blocks[index] as a MagicModel block: normalised-to-points bbox, one line of spans.
MBlock MakeBlock(const PageInput& page, size_t index, int width, int height, const AssembleOptions& options) {
  const ContentBlock& info = page.blocks[index];
  IBox bb = {static_cast<int>(info.bbox[0] * width), static_cast<int>(info.bbox[1] * height),
             static_cast<int>(info.bbox[2] * width), static_cast<int>(info.bbox[3] * height)};
  if (bb[2] < bb[0]) std::swap(bb[0], bb[2]);
  if (bb[3] < bb[1]) std::swap(bb[1], bb[3]);
  const TypedBlock t = ClassifyBlock(info, options);

  Json line = Json::object();
  line["bbox"] = BoxJson(bb);
  line["spans"] = BlockSpans(t, bb, page.page_idx, options);
  if (t.block_type == "code_body") {
    Json extra = Json::object();
    extra["type"] = *t.code_sub_type;
    extra["guess_lang"] = *t.guess_lang;
    line["extra"] = std::move(extra);
  }
  MBlock b;
  b.obj = Json::object();
  b.obj["bbox"] = BoxJson(bb);
  b.obj["type"] = t.block_type;
  b.obj["angle"] = info.angle ? Json(*info.angle) : Json(nullptr);
  b.obj["lines"] = Json::array({std::move(line)});
  b.obj["index"] = static_cast<int>(index);
  b.type = t.block_type;
  b.bbox = bb;
  b.index = static_cast<int>(index);
  return b;
}

// The page's blocks sorted into MagicModel's per-category lists (copies, page order kept).
struct BlockGroups {
  std::vector<MBlock> image, table, code, equation, text, title, discarded, ref_text, phonetic, list;
};

BlockGroups GroupBlocks(const std::vector<MBlock>& blocks) {
  BlockGroups g;
  for (const auto& b : blocks) {
    const std::string& t = b.type;
    if (t == "image_body" || t == "image_caption" || t == "image_footnote") {
      g.image.push_back(b);
    } else if (t == "table_body" || t == "table_caption" || t == "table_footnote") {
      g.table.push_back(b);
    } else if (t == "code_body" || t == "code_caption") {
      g.code.push_back(b);
    } else if (t == "interline_equation") {
      g.equation.push_back(b);
    } else if (t == "text") {
      g.text.push_back(b);
    } else if (t == "title") {
      g.title.push_back(b);
    } else if (t == "ref_text") {
      g.ref_text.push_back(b);
    } else if (t == "phonetic") {
      g.phonetic.push_back(b);
    } else if (t == "header" || t == "footer" || t == "page_number" || t == "aside_text" ||
               t == "page_footnote") {
      g.discarded.push_back(b);
    } else if (t == "list") {
      g.list.push_back(b);
    }
  }
  return g;
}

// Moves each code group's body "extra" (sub type, guessed language) up onto the group object.
void HoistCodeExtras(std::vector<MBlock>& codes) {
  for (auto& group : codes) {
    // Keys are added to the group only after the loop: inserting into an ordered_json object while
    // holding references into it would leave them dangling.
    Json sub_type, guess_lang;
    Json& inner_blocks = group.obj["blocks"];
    for (auto& inner : inner_blocks) {
      if (inner["type"] != "code_body") continue;
      if (!inner["lines"].empty()) {
        Json& line = inner["lines"][0];
        const Json extra = line["extra"];
        sub_type = extra["type"];
        if (extra["type"] == "code") guess_lang = extra["guess_lang"];
        line = WithoutKey(line, "extra");
      } else {
        sub_type = "code";
        guess_lang = "txt";
      }
    }
    if (!sub_type.is_null()) group.obj["sub_type"] = sub_type;
    if (!guess_lang.is_null()) group.obj["guess_lang"] = guess_lang;
  }
}

}  // namespace

Json PageInfoJson(const PageInput& page, const AssembleOptions& options) {
  // width, height = map(int, page.get_size())
  const int width = static_cast<int>(page.width_pt);
  const int height = static_cast<int>(page.height_pt);

  std::vector<MBlock> blocks;
  for (size_t index = 0; index < page.blocks.size(); ++index) {
    blocks.push_back(MakeBlock(page, index, width, height, options));
  }
  BlockGroups g = GroupBlocks(blocks);

  FixListBlocks(g.list, g.text, g.ref_text);
  std::vector<MBlock> left_out_image, left_out_table, left_out_code;
  std::vector<MBlock> images = FixTwoLayerBlocks(g.image, "image", left_out_image);
  std::vector<MBlock> tables = FixTwoLayerBlocks(g.table, "table", left_out_table);
  std::vector<MBlock> codes = FixTwoLayerBlocks(g.code, "code", left_out_code);
  HoistCodeExtras(codes);
  for (auto* left : {&left_out_image, &left_out_table, &left_out_code}) {
    for (auto& b : *left) {
      b.obj["type"] = "text";  // in place: the key keeps its position
      b.type = "text";
      g.text.push_back(b);
    }
  }

  std::vector<MBlock*> ordered;
  for (auto* v :
       {&images, &tables, &codes, &g.ref_text, &g.phonetic, &g.title, &g.text, &g.equation, &g.list}) {
    for (auto& b : *v) ordered.push_back(&b);
  }
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const MBlock* a, const MBlock* b) { return a->index < b->index; });

  Json page_info = Json::object();
  Json para = Json::array();
  for (const MBlock* b : ordered) para.push_back(b->obj);
  Json discarded = Json::array();
  for (const auto& b : g.discarded) discarded.push_back(b.obj);
  page_info["para_blocks"] = std::move(para);
  page_info["discarded_blocks"] = std::move(discarded);
  page_info["page_size"] = Json::array({width, height});
  page_info["page_idx"] = page.page_idx;
  return page_info;
}

Json MiddleJson(const std::vector<PageInput>& pages, const AssembleOptions& options) {
  Json pdf_info = Json::array();
  for (const auto& p : pages) pdf_info.push_back(PageInfoJson(p, options));
  return MiddleJsonFromPages(std::move(pdf_info), options);
}

Json MiddleJsonFromPages(Json pdf_info, const AssembleOptions& options) {
  Json middle = Json::object();
  middle["pdf_info"] = std::move(pdf_info);
  middle["_backend"] = "vlm";
  middle["_version_name"] = options.version_name;
  return middle;
}

}  // namespace mineru::pipeline
