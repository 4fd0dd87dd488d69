// pipeline/write/mineru_3_4/middle.cc — MinerU 3.4.4 MagicModel (backend/vlm/vlm_magic_model.py) and
// blocks_to_page_info (backend/vlm/model_output_to_middle_json.py) for vl-utils 1.2.x blocks.
// finalize_middle_json is in finalize.cc.
#include <algorithm>
#include <map>
#include <set>

#include "base/hash.h"
#include "pipeline/common/magic_model.h"
#include "pipeline/common/py_text.h"
#include "pipeline/write/mineru_3_4/assemble.h"
#include "pipeline/write/mineru_3_4/visual.h"

namespace mineru::pipeline {

std::string GuessCodeLanguage(std::string_view code);     // code_language.cc
Json FinalizeMiddleV34(Json pdf_info, bool table_merge);  // finalize.cc
std::string ReplaceInlineTableImages(const std::string& html,
                                     const InlineImageWriteFn& write);  // finalize.cc

namespace {

using detail::BoxJson;
using detail::WithoutKey;

bool IsTextSpanType(const std::string& t) {
  static const std::set<std::string> kTypes = {"text",          "title",  "ref_text",    "phonetic",
                                               "header",        "footer", "page_number", "aside_text",
                                               "page_footnote", "list"};
  return kTypes.count(t) > 0;
}

// re.sub(r"\n\s*", " ", c).strip() for raw titles.
std::string JoinTitleLines(const std::string& c) {
  std::string out;
  for (size_t i = 0; i < c.size();) {
    if (c[i] == '\n') {
      ++i;
      while (i < c.size()) {
        const size_t n = py::SpaceLen(c, i);
        if (n == 0) break;
        i += n;
      }
      out += ' ';
      continue;
    }
    out += c[i++];
  }
  return std::string(py::Strip(out));
}

struct Mapped {
  std::string block_type, span_type = "unknown";
  std::optional<std::string> content, code_sub_type, guess_lang;
};

Mapped MapType(const ContentBlock& info, const AssembleV34Options& opt) {
  Mapped m;
  const std::string& t = info.type;
  m.block_type = t;
  m.content = info.content;
  if (IsTextSpanType(t)) {
    m.span_type = "text";
  } else if (t == "image_caption" || t == "table_caption" || t == "code_caption") {
    m.block_type = "caption";
    m.span_type = "text";
  } else if (t == "image_footnote" || t == "table_footnote") {
    m.block_type = "footnote";
    m.span_type = "text";
  } else if (t == "image" || t == "image_block") {
    m.block_type = t == "image" ? "image_body" : v34::kImageBlockBody;
    m.span_type = "image";
  } else if (t == "table") {
    m.block_type = "table_body";
    m.span_type = "table";
  } else if (t == "chart") {
    m.block_type = "chart_body";
    m.span_type = "chart";
  } else if (t == "code" || t == "algorithm") {
    m.content = detail::CodeContentClean(m.content);
    m.code_sub_type = t;
    m.block_type = "code_body";
    m.span_type = "text";
    m.guess_lang =
        opt.guess_code_language ? opt.guess_code_language(*m.content) : GuessCodeLanguage(*m.content);
  } else if (t == "equation") {
    m.block_type = "interline_equation";
    m.span_type = "interline_equation";
  }
  if (m.span_type == "text" && !m.content) m.content = std::string();
  return m;
}

// The spans of one block; image_path is appended to media spans (cut_image_and_table).
std::vector<Json> BuildSpans(const ContentBlock& info, Mapped& m, const IBox& bb, int page_idx,
                             const AssembleV34Options& opt, bool& has_inline_eq) {
  auto image_path = [&](const std::string& type) -> std::string {
    if (bb[0] >= bb[2] || bb[1] >= bb[3] || !opt.image_path) return "";
    CropRequest req;
    req.round_out = true;  // get_crop_img: floor/ceil
    req.span_type = type;
    req.page_idx = page_idx;
    std::copy(bb.begin(), bb.end(), req.bbox);
    return opt.image_path(req);
  };
  Json span = Json::object();
  if (m.span_type == "image" || m.span_type == "table" || m.span_type == "chart") {
    span["bbox"] = BoxJson(bb);
    span["type"] = m.span_type;
    if (m.span_type == "table") {
      span["html"] = m.content ? Json(*m.content) : Json(nullptr);
    } else if ((info.type == "image" || info.type == "chart") && m.content) {
      span["content"] = *m.content;
    }
    span["image_path"] = image_path(m.span_type);
    if (m.span_type == "table" && m.content && opt.write_inline_image) {
      span["html"] = ReplaceInlineTableImages(*m.content, opt.write_inline_image);
    }
    return {span};
  }
  if (m.span_type == "interline_equation") {
    span["bbox"] = BoxJson(bb);
    span["type"] = m.span_type;
    span["content"] = detail::IsolatedFormulaClean(m.content.value_or(""));
    span["image_path"] = image_path(m.span_type);
    return {span};
  }
  std::optional<std::string> content = m.content;
  if (m.block_type == "title" && content && !content->empty()) {
    // clean_content, then the title join; TextSpans cleans again (a no-op on balanced pairs).
    content = JoinTitleLines(detail::CleanContent(*content));
  }
  if (content && !content->empty()) {
    const size_t opens = py::Count(*content, "\\(");
    has_inline_eq = opens > 0 && opens == py::Count(*content, "\\)");
  }
  return detail::TextSpans(bb, m.span_type.c_str(), content);
}

Json BuildBlock(const ContentBlock& info, int index, int width, int height, int page_idx,
                const AssembleV34Options& opt) {
  IBox bb = {static_cast<int>(info.bbox[0] * width), static_cast<int>(info.bbox[1] * height),
             static_cast<int>(info.bbox[2] * width), static_cast<int>(info.bbox[3] * height)};
  if (bb[2] < bb[0]) std::swap(bb[0], bb[2]);
  if (bb[3] < bb[1]) std::swap(bb[1], bb[3]);
  Mapped m = MapType(info, opt);
  bool has_inline_eq = false;
  std::vector<Json> spans = BuildSpans(info, m, bb, page_idx, opt, has_inline_eq);
  Json line = Json::object();
  line["bbox"] = BoxJson(bb);
  line["spans"] = spans;
  if (m.block_type == "code_body") {
    std::string sub = *m.code_sub_type;
    if (has_inline_eq && sub == "code") sub = "algorithm";
    Json extra = Json::object();
    extra["type"] = sub;
    extra["guess_lang"] = *m.guess_lang;
    line["extra"] = std::move(extra);
  }
  Json b = Json::object();
  b["bbox"] = BoxJson(bb);
  b["type"] = m.block_type;
  b["angle"] = info.angle ? Json(*info.angle) : Json(nullptr);
  b["lines"] = Json::array({std::move(line)});
  b["index"] = index;
  if ((info.type == "image" || info.type == "chart") && info.sub_type && !info.sub_type->empty()) {
    b["sub_type"] = *info.sub_type;
  }
  if (info.type == "table" && info.cell_merge) b["cell_merge"] = *info.cell_merge;
  if (info.type == "text" && info.merge_prev) b["merge_prev"] = *info.merge_prev;
  return b;
}

// fix_list_blocks: lists take the text / ref_text blocks >= 80% inside them (text first, then
// ref_text; first list wins). Every list loses "lines" and gets "blocks"; empty lists are dropped
// from `lists` (they stay in `blocks`, transparent). Taken children leave `texts` / `refs`.
void FixListBlocks(std::vector<Json>& blocks, std::vector<size_t>& lists, std::vector<size_t>& texts,
                   std::vector<size_t>& refs) {
  std::map<size_t, std::vector<size_t>> kids;
  std::set<size_t> taken;
  for (const auto* v : {&texts, &refs}) {
    for (size_t b : *v) {
      for (size_t l : lists) {
        if (OverlapInFirstRatio(v34::BoxOfJson(blocks[b]), v34::BoxOfJson(blocks[l])) >= 0.8) {
          kids[l].push_back(b);
          taken.insert(b);
          break;
        }
      }
    }
  }
  std::vector<size_t> kept;
  for (size_t l : lists) {
    Json obj = WithoutKey(blocks[l], "lines");
    obj["blocks"] = Json::array();
    std::vector<std::pair<std::string, int>> counts;
    for (size_t c : kids[l]) {
      obj["blocks"].push_back(blocks[c]);
      const std::string t = blocks[c]["type"];
      auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& p) { return p.first == t; });
      if (it == counts.end())
        counts.emplace_back(t, 1);
      else
        ++it->second;
    }
    if (!counts.empty()) {
      auto best = counts.begin();
      for (auto it = counts.begin(); it != counts.end(); ++it) {
        if (it->second > best->second) best = it;
      }
      obj["sub_type"] = best->first;
      kept.push_back(l);
    }
    blocks[l] = std::move(obj);
  }
  lists = std::move(kept);
  auto drop = [&](std::vector<size_t>& v) {
    v.erase(std::remove_if(v.begin(), v.end(), [&](size_t b) { return taken.count(b) > 0; }), v.end());
  };
  drop(texts);
  drop(refs);
}

// Code groups: sub_type (+ guess_lang for code) from the body line's "extra", which is removed.
void FinishCodeGroup(Json& group) {
  Json sub_type, guess_lang;
  for (auto& inner : group["blocks"]) {
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
  if (!sub_type.is_null()) group["sub_type"] = sub_type;
  if (!guess_lang.is_null()) group["guess_lang"] = guess_lang;
}

}  // namespace

Json PageInfoV34(const PageInput& page, const AssembleV34Options& opt) {
  const int width = static_cast<int>(page.width_pt), height = static_cast<int>(page.height_pt);
  std::vector<Json> blocks;
  for (size_t i = 0; i < page.blocks.size(); ++i) {
    blocks.push_back(BuildBlock(page.blocks[i], static_cast<int>(i), width, height, page.page_idx, opt));
  }
  v34::FallbackCaptions(blocks);
  std::vector<size_t> eqs, texts, titles, refs, phonetics, discarded, lists;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const std::string t = blocks[i]["type"];
    if (t == "interline_equation")
      eqs.push_back(i);
    else if (t == "text")
      texts.push_back(i);
    else if (t == "title")
      titles.push_back(i);
    else if (t == "ref_text")
      refs.push_back(i);
    else if (t == "phonetic")
      phonetics.push_back(i);
    else if (t == "header" || t == "footer" || t == "page_number" || t == "aside_text" ||
             t == "page_footnote")
      discarded.push_back(i);
    else if (t == "list")
      lists.push_back(i);
  }
  FixListBlocks(blocks, lists, texts, refs);
  v34::VisualGroups vg = v34::RegroupVisualBlocks(blocks);
  for (auto& g : vg.groups[3]) FinishCodeGroup(g);
  for (size_t c : vg.unmatched) {
    blocks[c]["type"] = "text";
    texts.push_back(c);
  }
  std::vector<Json> para;
  for (auto& kind : vg.groups) {
    for (auto& g : kind) para.push_back(std::move(g));
  }
  for (const auto* v : {&refs, &phonetics, &titles, &texts, &eqs, &lists}) {
    for (size_t i : *v) para.push_back(blocks[i]);
  }
  std::stable_sort(para.begin(), para.end(), [](const Json& a, const Json& b) {
    return a["index"].get<int>() < b["index"].get<int>();
  });
  Json info = Json::object();
  info["preproc_blocks"] = Json(para);
  info["discarded_blocks"] = Json::array();
  for (size_t i : discarded) info["discarded_blocks"].push_back(blocks[i]);
  info["page_size"] = Json::array({width, height});
  info["page_idx"] = page.page_idx;
  return info;
}

Json MiddleJsonV34(const std::vector<PageInput>& pages, const AssembleV34Options& options) {
  Json pdf_info = Json::array();
  for (const auto& p : pages) pdf_info.push_back(PageInfoV34(p, options));
  return MiddleJsonV34FromPages(std::move(pdf_info), options);
}

Json MiddleJsonV34FromPages(Json pdf_info, const AssembleV34Options& options) {
  Json middle = Json::object();
  middle["pdf_info"] = FinalizeMiddleV34(std::move(pdf_info), options.cross_page_table_merge);
  middle["_backend"] = "vlm";
  middle["_version_name"] = options.version_name;
  return middle;
}

}  // namespace mineru::pipeline
