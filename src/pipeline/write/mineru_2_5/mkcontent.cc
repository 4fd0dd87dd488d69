// pipeline/write/mineru_2_5/mkcontent.cc — MinerU 2.5.4 vlm_middle_json_mkcontent: Markdown and content_list
// from middle.json (union_make, mk_blocks_to_markdown, make_blocks_to_content_list, merge_para_with_text).
#include "pipeline/common/magic_model.h"
#include "pipeline/common/py_text.h"
#include "pipeline/write/mineru_2_5/assemble.h"

namespace mineru::pipeline {

namespace {

// Default delimiters (no latex-delimiter config): display $$ ... $$, inline $ ... $.
constexpr std::string_view kDisplayLeft = "$$", kDisplayRight = "$$", kInlineLeft = "$", kInlineRight = "$";

using detail::StrOr;
using detail::TypeOf;

std::string MergeParaWithText(const Json& block, bool formula_enable = true,
                              const std::string& image_dir = "") {
  std::string text;
  const auto lines = block.find("lines");
  if (lines == block.end()) return text;
  for (const auto& line : *lines) {
    const Json& spans = line["spans"];
    for (size_t j = 0; j < spans.size(); ++j) {
      const Json& span = spans[j];
      const std::string type = TypeOf(span);
      std::string content;
      if (type == "text") {
        content = StrOr(span, "content");
      } else if (type == "inline_equation") {
        content = std::string(kInlineLeft) + StrOr(span, "content") + std::string(kInlineRight);
      } else if (type == "interline_equation") {
        if (formula_enable) {
          content = "\n" + std::string(kDisplayLeft) + "\n" + StrOr(span, "content") + "\n" +
                    std::string(kDisplayRight) + "\n";
        } else if (!StrOr(span, "image_path").empty()) {
          content = "![](" + image_dir + "/" + StrOr(span, "image_path") + ")";
        }
      }
      if (content.empty()) continue;
      if (type == "text" || type == "inline_equation") {
        text += content;
        if (j + 1 != spans.size()) text += ' ';
      } else if (type == "interline_equation") {
        text += content;
      }
    }
  }
  return text;
}

int TitleLevel(const Json& block) {
  int level = 1;
  const auto it = block.find("level");
  if (it != block.end() && it->is_number_integer()) level = it->get<int>();
  if (level > 4) return 4;
  if (level < 1) return 0;
  return level;
}

// The image_path of the first span of `span_type` in the body block(s) of a two-layer block, in
// document order (later spans overwrite earlier ones, as the reference loops do).
void ForEachBodySpan(const Json& group, const char* body_type, const char* span_type,
                     const std::function<void(const Json&)>& fn) {
  for (const auto& b : group["blocks"]) {
    if (TypeOf(b) != body_type) continue;
    for (const auto& line : b["lines"]) {
      for (const auto& span : line["spans"]) {
        if (TypeOf(span) == span_type) fn(span);
      }
    }
  }
}

std::string ImageLink(const std::string& image_dir, const std::string& path) {
  return "![](" + image_dir + "/" + path + ")";
}

std::vector<std::string> BlocksToMarkdown(const Json& para_blocks, const MarkdownOptions& opt) {
  std::vector<std::string> out;
  const bool mm = opt.mode == MarkdownMode::kMultimodal;
  for (const auto& block : para_blocks) {
    std::string text;
    const std::string type = TypeOf(block);
    if (type == "text" || type == "interline_equation" || type == "phonetic" || type == "ref_text") {
      text = MergeParaWithText(block, opt.formula_enable, opt.image_dir);
    } else if (type == "list") {
      for (const auto& item : block["blocks"]) {
        text += MergeParaWithText(item, opt.formula_enable, opt.image_dir) + "  \n";
      }
    } else if (type == "title") {
      text = std::string(static_cast<size_t>(TitleLevel(block)), '#') + " " + MergeParaWithText(block);
    } else if (type == "image") {
      if (!mm) continue;
      bool has_footnote = false;
      for (const auto& b : block["blocks"]) has_footnote = has_footnote || TypeOf(b) == "image_footnote";
      auto append_body = [&]() {
        ForEachBodySpan(block, "image_body", "image", [&](const Json& span) {
          if (!StrOr(span, "image_path").empty()) text += ImageLink(opt.image_dir, StrOr(span, "image_path"));
        });
      };
      if (has_footnote) {
        for (const auto& b : block["blocks"]) {
          if (TypeOf(b) == "image_caption") text += MergeParaWithText(b) + "  \n";
        }
        append_body();
        for (const auto& b : block["blocks"]) {
          if (TypeOf(b) == "image_footnote") text += "  \n" + MergeParaWithText(b);
        }
      } else {
        append_body();
        for (const auto& b : block["blocks"]) {
          if (TypeOf(b) == "image_caption") text += "  \n" + MergeParaWithText(b);
        }
      }
    } else if (type == "table") {
      if (!mm) continue;
      for (const auto& b : block["blocks"]) {
        if (TypeOf(b) == "table_caption") text += MergeParaWithText(b) + "  \n";
      }
      ForEachBodySpan(block, "table_body", "table", [&](const Json& span) {
        const std::string html = StrOr(span, "html");
        const std::string path = StrOr(span, "image_path");
        if (opt.table_enable) {
          if (!html.empty()) {
            text += "\n" + html + "\n";
          } else if (!path.empty()) {
            text += ImageLink(opt.image_dir, path);
          }
        } else if (!path.empty()) {
          text += ImageLink(opt.image_dir, path);
        }
      });
      for (const auto& b : block["blocks"]) {
        if (TypeOf(b) == "table_footnote") text += "\n" + MergeParaWithText(b) + "  ";
      }
    } else if (type == "code") {
      const std::string sub_type = StrOr(block, "sub_type");
      for (const auto& b : block["blocks"]) {
        if (TypeOf(b) == "code_caption") text += MergeParaWithText(b) + "  \n";
      }
      for (const auto& b : block["blocks"]) {
        if (TypeOf(b) != "code_body") continue;
        if (sub_type == "code") {
          text += "```" + StrOr(block, "guess_lang") + "\n" + MergeParaWithText(b) + "\n```";
        } else if (sub_type == "algorithm") {
          text += MergeParaWithText(b);
        }
      }
    }
    if (py::IsBlank(text)) continue;
    out.emplace_back(py::Strip(text));
  }
  return out;
}

// make_blocks_to_content_list of an image block: its picture, captions and footnotes.
void ImageContent(const Json& block, const std::string& image_dir, Json& c) {
  c["type"] = "image";
  c["img_path"] = "";
  c["image_caption"] = Json::array();
  c["image_footnote"] = Json::array();
  for (const auto& b : block["blocks"]) {
    const std::string bt = TypeOf(b);
    if (bt == "image_body") {
      for (const auto& line : b["lines"]) {
        for (const auto& span : line["spans"]) {
          if (TypeOf(span) == "image" && !StrOr(span, "image_path").empty()) {
            c["img_path"] = image_dir + "/" + StrOr(span, "image_path");
          }
        }
      }
    }
    if (bt == "image_caption") c["image_caption"].push_back(MergeParaWithText(b));
    if (bt == "image_footnote") c["image_footnote"].push_back(MergeParaWithText(b));
  }
}

// make_blocks_to_content_list of a table block: its HTML, picture, captions and footnotes.
void TableContent(const Json& block, const std::string& image_dir, Json& c) {
  c["type"] = "table";
  c["img_path"] = "";
  c["table_caption"] = Json::array();
  c["table_footnote"] = Json::array();
  for (const auto& b : block["blocks"]) {
    const std::string bt = TypeOf(b);
    if (bt == "table_body") {
      for (const auto& line : b["lines"]) {
        for (const auto& span : line["spans"]) {
          if (TypeOf(span) != "table") continue;
          if (!StrOr(span, "html").empty()) c["table_body"] = StrOr(span, "html");
          if (!StrOr(span, "image_path").empty()) c["img_path"] = image_dir + "/" + StrOr(span, "image_path");
        }
      }
    }
    if (bt == "table_caption") c["table_caption"].push_back(MergeParaWithText(b));
    if (bt == "table_footnote") c["table_footnote"].push_back(MergeParaWithText(b));
  }
}

// make_blocks_to_content_list of a code block: its body, language and captions.
void CodeContent(const Json& block, Json& c) {
  const std::string sub_type = StrOr(block, "sub_type");
  c["type"] = "code";
  c["sub_type"] = sub_type;
  c["code_caption"] = Json::array();
  for (const auto& b : block["blocks"]) {
    const std::string bt = TypeOf(b);
    if (bt == "code_body") {
      c["code_body"] = MergeParaWithText(b);
      if (sub_type == "code")
        c["guess_lang"] = block.contains("guess_lang") ? block["guess_lang"] : Json(nullptr);
    }
    if (bt == "code_caption") c["code_caption"].push_back(MergeParaWithText(b));
  }
}

Json BlockToContent(const Json& block, const std::string& image_dir, int page_idx, double page_w,
                    double page_h) {
  const std::string type = TypeOf(block);
  Json c = Json::object();
  if (type == "text" || type == "ref_text" || type == "phonetic" || type == "header" || type == "footer" ||
      type == "page_number" || type == "aside_text" || type == "page_footnote") {
    c["type"] = type;
    c["text"] = MergeParaWithText(block);
  } else if (type == "list") {
    c["type"] = type;
    c["sub_type"] = StrOr(block, "sub_type");
    Json items = Json::array();
    for (const auto& b : block["blocks"]) {
      const std::string item = MergeParaWithText(b);
      if (!py::IsBlank(item)) items.push_back(item);
    }
    c["list_items"] = std::move(items);
  } else if (type == "title") {
    const int level = TitleLevel(block);
    c["type"] = "text";
    c["text"] = MergeParaWithText(block);
    if (level != 0) c["text_level"] = level;
  } else if (type == "interline_equation") {
    c["type"] = "equation";
    c["text"] = MergeParaWithText(block);
    c["text_format"] = "latex";
  } else if (type == "image") {
    ImageContent(block, image_dir, c);
  } else if (type == "table") {
    TableContent(block, image_dir, c);
  } else if (type == "code") {
    CodeContent(block, c);
  }
  const auto bbox = block.find("bbox");
  if (bbox != block.end() && bbox->is_array() && bbox->size() == 4) {
    const double x0 = (*bbox)[0].get<double>(), y0 = (*bbox)[1].get<double>();
    const double x1 = (*bbox)[2].get<double>(), y1 = (*bbox)[3].get<double>();
    // int(x0 * 1000 / page_width): truncation toward zero.
    c["bbox"] =
        Json::array({static_cast<long long>(x0 * 1000 / page_w), static_cast<long long>(y0 * 1000 / page_h),
                     static_cast<long long>(x1 * 1000 / page_w), static_cast<long long>(y1 * 1000 / page_h)});
  }
  c["page_idx"] = page_idx;
  return c;
}

}  // namespace

std::string MarkdownFromMiddle(const Json& middle, const MarkdownOptions& options) {
  std::vector<std::string> parts;
  for (const auto& page : middle["pdf_info"]) {
    const auto it = page.find("para_blocks");
    if (it == page.end() || it->empty()) continue;
    for (auto& p : BlocksToMarkdown(*it, options)) parts.push_back(std::move(p));
  }
  std::string md;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) md += "\n\n";
    md += parts[i];
  }
  return md;
}

Json ContentListFromMiddle(const Json& middle, const std::string& image_dir) {
  Json out = Json::array();
  for (const auto& page : middle["pdf_info"]) {
    const int page_idx = page.value("page_idx", 0);
    double w = 0, h = 0;
    if (page.contains("page_size") && page["page_size"].size() == 2) {
      w = page["page_size"][0].get<double>();
      h = page["page_size"][1].get<double>();
    }
    for (const char* key : {"para_blocks", "discarded_blocks"}) {
      const auto it = page.find(key);
      if (it == page.end()) continue;
      for (const auto& block : *it) out.push_back(BlockToContent(block, image_dir, page_idx, w, h));
    }
  }
  return out;
}

}  // namespace mineru::pipeline
