// pipeline/write/mineru_3_4/content_list.cc — MinerU 3.4.4 make_blocks_to_content_list (v1) and
// make_blocks_to_content_list_v2 (backend/vlm/vlm_middle_json_mkcontent.py) for one para block.
#include "pipeline/common/magic_model.h"
#include "pipeline/common/py_text.h"
#include "pipeline/write/mineru_3_4/text_join.h"

namespace mineru::pipeline {

std::string FormatEmbeddedHtmlV34(const std::string& html, const std::string& dir);
std::pair<std::string, Json> BodyDataV34(const Json& block);
Json BboxPermilleV34(const Json& block, const Json& page_size);
std::string CodeMarkdownV34(Json& body, const Json& group);
int TitleLevelV34(const Json& block);

namespace {

using v34::MergeParaWithText;
using v34::MergeParaWithTextV2;

using detail::StrOr;
using detail::TypeOf;
Json StrOrEmpty(const Json& v) { return (v.is_string() && !v.get<std::string>().empty()) ? v : Json(""); }

bool IsPlainTextType(const std::string& t) {
  return t == "text" || t == "ref_text" || t == "phonetic" || t == "header" || t == "footer" ||
         t == "page_number" || t == "aside_text" || t == "page_footnote";
}

// image / chart / table entries of v1.
Json VisualV1(Json& block, const std::string& type, const std::string& dir) {
  Json c = Json::object();
  c["type"] = type;
  const auto [path, content] = BodyDataV34(block);
  if (type == "table") {
    c["img_path"] = "";
    c["table_caption"] = Json::array();
    c["table_footnote"] = Json::array();
    for (auto& b : block["blocks"]) {
      if (TypeOf(b) != "table_body") continue;
      for (auto& line : b["lines"]) {
        for (auto& s : line["spans"]) {
          if (TypeOf(s) != "table") continue;
          if (!StrOr(s, "html").empty()) c["table_body"] = FormatEmbeddedHtmlV34(StrOr(s, "html"), dir);
          if (!StrOr(s, "image_path").empty()) c["img_path"] = dir + "/" + StrOr(s, "image_path");
        }
      }
    }
  } else if (type == "image") {
    c["img_path"] = detail::MediaPath(dir, path);
    c["image_caption"] = Json::array();
    c["image_footnote"] = Json::array();
    c["content"] = StrOrEmpty(content);
  } else {
    c["img_path"] = detail::MediaPath(dir, path);
    c["content"] = StrOrEmpty(content);
    c["chart_caption"] = Json::array();
    c["chart_footnote"] = Json::array();
  }
  if (type != "table" && !StrOr(block, "sub_type").empty()) c["sub_type"] = block["sub_type"];
  for (auto& b : block["blocks"]) {
    const std::string bt = TypeOf(b);
    if (bt == type + "_caption" || bt == type + "_footnote") c[bt].push_back(MergeParaWithText(b));
  }
  return c;
}

Json CodeV1(Json& block) {
  Json c = Json::object();
  c["type"] = "code";
  c["sub_type"] = block["sub_type"];
  c["code_caption"] = Json::array();
  for (auto& b : block["blocks"]) {
    if (TypeOf(b) == "code_body") c["code_body"] = CodeMarkdownV34(b, block);
    if (TypeOf(b) == "code_caption") c["code_caption"].push_back(MergeParaWithText(b));
  }
  return c;
}

}  // namespace

Json ContentV1(Json& block, const std::string& dir, int page_idx, const Json& page_size) {
  const std::string type = TypeOf(block);
  Json c = Json::object();
  if (IsPlainTextType(type)) {
    c["type"] = type;
    c["text"] = MergeParaWithText(block);
  } else if (type == "list") {
    c["type"] = type;
    c["sub_type"] = StrOr(block, "sub_type");
    c["list_items"] = Json::array();
    for (auto& b : block["blocks"]) {
      const std::string item = MergeParaWithText(b, false);
      if (!py::IsBlank(item)) c["list_items"].push_back(item);
    }
  } else if (type == "title") {
    const int level = TitleLevelV34(block);
    c["type"] = "text";
    c["text"] = MergeParaWithText(block);
    if (level != 0) c["text_level"] = level;
  } else if (type == "interline_equation") {
    c["type"] = "equation";
    c["text"] = MergeParaWithText(block);
    c["text_format"] = "latex";
  } else if (type == "image" || type == "table" || type == "chart") {
    c = VisualV1(block, type, dir);
  } else if (type == "code") {
    c = CodeV1(block);
  }
  if (block.contains("bbox")) c["bbox"] = BboxPermilleV34(block, page_size);
  c["page_idx"] = page_idx;
  return c;
}

namespace {

Json Entry(const std::string& type, Json content) {
  Json e = Json::object();
  e["type"] = type;
  e["content"] = std::move(content);
  return e;
}

Json Captions(Json& block, const std::string& bt) {
  Json out = Json::array();
  for (auto& b : block["blocks"]) {
    if (TypeOf(b) != bt) continue;
    for (auto& s : MergeParaWithTextV2(b)) out.push_back(s);
  }
  return out;
}

Json VisualV2(Json& block, const std::string& type, const std::string& dir) {
  const auto [path, content] = BodyDataV34(block);
  Json c = Json::object();
  if (type == "table") {
    const std::string html =
        FormatEmbeddedHtmlV34(content.is_string() ? content.get<std::string>() : "", dir);
    const int nest = py::Count(html, "<table") > 1 ? 2 : 1;
    const bool complex =
        html.find("colspan") != std::string::npos || html.find("rowspan") != std::string::npos || nest > 1;
    c["image_source"] = Json{{"path", dir + "/" + path}};
    c["table_caption"] = Captions(block, "table_caption");
    c["table_footnote"] = Captions(block, "table_footnote");
    c["html"] = html;
    c["table_type"] = complex ? "complex_table" : "simple_table";
    c["table_nest_level"] = nest;
    return Entry("table", std::move(c));
  }
  c["image_source"] = Json{{"path", detail::MediaPath(dir, path)}};
  c["content"] = StrOrEmpty(content);
  c[type + "_caption"] = Captions(block, type + "_caption");
  c[type + "_footnote"] = Captions(block, type + "_footnote");
  Json e = Entry(type, std::move(c));
  if (!StrOr(block, "sub_type").empty()) e["sub_type"] = block["sub_type"];
  return e;
}

Json CodeV2(Json& block) {
  Json caption = Captions(block, "code_caption");
  Json body = Json::array();
  for (auto& b : block["blocks"]) {
    if (TypeOf(b) == "code_body") body = MergeParaWithTextV2(b);
  }
  Json c = Json::object();
  if (StrOr(block, "sub_type") == "algorithm") {
    c["algorithm_caption"] = std::move(caption);
    c["algorithm_content"] = std::move(body);
    return Entry("algorithm", std::move(c));
  }
  c["code_caption"] = std::move(caption);
  c["code_content"] = std::move(body);
  c["code_language"] = block.contains("guess_lang") ? block["guess_lang"] : Json("txt");
  return Entry("code", std::move(c));
}

Json ListV2(Json& block, const std::string& type) {
  Json items = Json::array();
  std::string list_type = "text_list";
  if (type == "ref_text") {
    list_type = "reference_list";
    items.push_back(Json{{"item_type", "text"}, {"item_content", MergeParaWithTextV2(block)}});
  } else {
    if (StrOr(block, "sub_type") == "ref_text") list_type = "reference_list";
    for (auto& b : block["blocks"]) {
      Json spans = MergeParaWithTextV2(b);
      if (!spans.empty()) items.push_back(Json{{"item_type", "text"}, {"item_content", std::move(spans)}});
    }
  }
  Json c = Json::object();
  c["list_type"] = list_type;
  c["list_items"] = std::move(items);
  return Entry("list", std::move(c));
}

}  // namespace

Json ContentV2(Json& block, const std::string& dir, const Json& page_size) {
  const std::string type = TypeOf(block);
  Json e = Json::object();
  if (type == "header" || type == "footer" || type == "aside_text" || type == "page_number" ||
      type == "page_footnote") {
    const std::string t = type == "header"       ? "page_header"
                          : type == "footer"     ? "page_footer"
                          : type == "aside_text" ? "page_aside_text"
                                                 : type;
    e = Entry(t, Json{{t + "_content", MergeParaWithTextV2(block)}});
  } else if (type == "title" && TitleLevelV34(block) != 0) {
    Json c = Json::object();
    c["title_content"] = MergeParaWithTextV2(block);
    c["level"] = TitleLevelV34(block);
    e = Entry("title", std::move(c));
  } else if (type == "title" || type == "text" || type == "phonetic") {
    e = Entry("paragraph", Json{{"paragraph_content", MergeParaWithTextV2(block)}});
  } else if (type == "interline_equation") {
    const auto [path, latex] = BodyDataV34(block);
    Json c = Json::object();
    c["math_content"] = latex;
    c["math_type"] = "latex";
    c["image_source"] = Json{{"path", dir + "/" + path}};
    e = Entry("equation_interline", std::move(c));
  } else if (type == "image" || type == "table" || type == "chart") {
    e = VisualV2(block, type, dir);
  } else if (type == "code") {
    e = CodeV2(block);
  } else if (type == "ref_text" || type == "list") {
    e = ListV2(block, type);
  }
  if (block.contains("bbox")) e["bbox"] = BboxPermilleV34(block, page_size);
  return e;
}

}  // namespace mineru::pipeline
