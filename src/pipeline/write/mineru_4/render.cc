// pipeline/write/mineru_4/render.cc — Markdown, structured content and the content list from Middle
// JSON 2.0 (see render.h).
#include "pipeline/write/mineru_4/render.h"

#include <cmath>
#include <utility>
#include <vector>

namespace mineru::pipeline::mineru4 {
namespace {

std::string Str(const Json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Natural-language spans as Markdown text: equation_inline as $..$, code_inline as `..`.
std::string SpansText(const Json& spans) {
  std::string out;
  if (!spans.is_array()) return out;
  for (const Json& s : spans) {
    const std::string type = Str(s, "type");
    if (type == "equation_inline") {
      out += "$" + Str(s, "content") + "$";
    } else if (type == "code_inline") {
      out += "`" + Str(s, "content") + "`";
    } else if (type == "hyperlink") {
      out += "[" + SpansText(s["content"]) + "](" + Str(s, "url") + ")";
    } else {
      out += Str(s, "content");
    }
  }
  return out;
}

bool IsFurniture(const std::string& type) {
  return type == "header" || type == "footer" || type == "page_number" || type == "aside_text";
}

// The parts of a visual block: caption and footnote texts, the body block.
struct Parts {
  std::vector<const Json*> captions, footnotes;
  const Json* body = nullptr;
};

Parts PartsOf(const Json& block) {
  Parts p;
  for (const Json& c : block["content"]) {
    const std::string t = Str(c, "type");
    if (t.size() > 8 && t.compare(t.size() - 8, 8, "_caption") == 0) {
      p.captions.push_back(&c);
    } else if (t.size() > 9 && t.compare(t.size() - 9, 9, "_footnote") == 0) {
      p.footnotes.push_back(&c);
    } else {
      p.body = &c;
    }
  }
  return p;
}

std::string VisualMarkdown(const Json& block) {
  const Parts p = PartsOf(block);
  std::vector<std::string> out;
  for (const Json* c : p.captions) out.push_back(SpansText((*c)["content"]));
  if (p.body) {
    const std::string type = Str(*p.body, "type");
    const std::string body = Str(*p.body, "content");
    const std::string image = Str(*p.body, "image_path");
    if (type == "code_body") {
      out.push_back("```" + Str(block, "guess_lang") + "\n" + body + "\n```");
    } else if (type == "algorithm_body") {
      out.push_back(SpansText((*p.body)["content"]));
    } else if (type == "table_body" && !body.empty()) {
      out.push_back(body);
    } else {
      if (!image.empty()) out.push_back("![](" + image + ")");
      if (!body.empty()) out.push_back(body);
    }
  }
  for (const Json* f : p.footnotes) out.push_back(SpansText((*f)["content"]));
  std::string md;
  for (const std::string& s : out) {
    if (s.empty()) continue;
    md += (md.empty() ? "" : "\n\n") + s;
  }
  return md;
}

std::string BlockMarkdown(const Json& block) {
  const std::string type = Str(block, "type");
  if (type == "doc_title" || type == "paragraph_title") {
    const std::string text = SpansText(block["content"]);
    const int level = block.value("level", 1);
    return text.empty() ? std::string() : std::string(static_cast<size_t>(level), '#') + " " + text;
  }
  if (type == "equation") {
    const std::string latex = Str(block, "content");
    return latex.empty() ? std::string() : "$$\n" + latex + "\n$$";
  }
  if (type == "list" || type == "index") {
    std::string md;
    for (const Json& item : block["content"]) {
      const std::string line = BlockMarkdown(item);
      if (!line.empty()) md += (md.empty() ? "" : "\n") + line;
    }
    return md;
  }
  if (type == "image" || type == "table" || type == "chart" || type == "code") return VisualMarkdown(block);
  return SpansText(block["content"]);
}

Json IntBox(const Json& bbox) {
  Json out = Json::array();
  if (!bbox.is_array()) return out;
  for (const Json& v : bbox) out.push_back(static_cast<int>(std::lround(v.get<double>() * 1000.0)));
  return out;
}

std::vector<std::string> Texts(const std::vector<const Json*>& parts) {
  std::vector<std::string> out;
  for (const Json* p : parts) out.push_back(SpansText((*p)["content"]));
  return out;
}

Json Annotations(const std::vector<const Json*>& parts) {
  Json out = Json::array();
  for (const Json* p : parts)
    out.push_back({{"bbox", (*p)["bbox"]}, {"content", SpansText((*p)["content"])}});
  return out;
}

Json StructuredBlock(const Json& block) {
  const std::string type = Str(block, "type");
  Json j = {{"type", type}};
  if (block.contains("level")) j["level"] = block["level"];
  if (block.contains("sub_type")) j["sub_type"] = block["sub_type"];
  j["bbox"] = block.value("bbox", Json());
  if (type == "image" || type == "table" || type == "chart" || type == "code") {
    const Parts p = PartsOf(block);
    j["content"] = p.body ? (p.body->at("content").is_string() ? Str(*p.body, "content")
                                                               : SpansText(p.body->at("content")))
                          : std::string();
    j["captions"] = Annotations(p.captions);
    j["footnotes"] = Annotations(p.footnotes);
    if (p.body && p.body->contains("image_path")) j["image_source"] = Str(*p.body, "image_path");
  } else if (type == "equation") {
    j["content"] = Str(block, "content");
    if (block.contains("image_path")) j["image_source"] = Str(block, "image_path");
  } else {
    j["content"] = BlockMarkdown(block);
  }
  return j;
}

// Content List V1 for a visual block: img_path, its captions/footnotes and body under the
// family's keys (table_body, code_body, content).
void VisualListItem(const Json& block, const std::string& type, Json& j) {
  const Parts p = PartsOf(block);
  const std::string family = type == "chart" ? "chart" : type;
  if (p.body && p.body->contains("image_path")) j["img_path"] = Str(*p.body, "image_path");
  if (type == "code") j["sub_type"] = block.value("sub_type", std::string("code"));
  j[family + "_caption"] = Texts(p.captions);
  j[family + "_footnote"] = Texts(p.footnotes);
  if (!p.body) return;
  const std::string body =
      p.body->at("content").is_string() ? Str(*p.body, "content") : SpansText(p.body->at("content"));
  if (type == "table") j["table_body"] = body;
  if (type == "code") {
    j["code_body"] = body;
    if (block.contains("guess_lang")) j["guess_lang"] = block["guess_lang"];
  }
  if ((type == "image" || type == "chart") && !body.empty()) j["content"] = body;
}

Json ContentListItem(const Json& block, int page_idx) {
  const std::string type = Str(block, "type");
  Json j = Json::object();
  if (type == "image" || type == "table" || type == "chart" || type == "code") {
    j["type"] = type;
    VisualListItem(block, type, j);
  } else if (type == "equation") {
    j["type"] = "equation";
    if (block.contains("image_path")) j["img_path"] = Str(block, "image_path");
    j["text"] = "$$\n" + Str(block, "content") + "\n$$";
    j["text_format"] = "latex";
  } else if (type == "list") {
    j["type"] = "list";
    j["sub_type"] = block.value("sub_type", std::string("text"));
    Json items = Json::array();
    for (const Json& item : block["content"]) items.push_back(BlockMarkdown(item));
    j["list_items"] = std::move(items);
  } else {
    const bool title = type == "doc_title" || type == "paragraph_title";
    j["type"] = title || type == "index" ? "text" : type;
    j["text"] = title ? SpansText(block["content"]) : BlockMarkdown(block);
    if (title) j["text_level"] = block.value("level", 1);
  }
  j["bbox"] = IntBox(block.value("bbox", Json()));
  j["page_idx"] = page_idx;
  return j;
}

}  // namespace

std::string Markdown(const Json& middle) {
  std::string md;
  for (const Json& page : middle["pages"]) {
    for (const Json& block : page["blocks"]) {
      if (IsFurniture(Str(block, "type"))) continue;
      const std::string text = BlockMarkdown(block);
      if (!text.empty()) md += (md.empty() ? "" : "\n\n") + text;
    }
  }
  return md;
}

Json StructuredContent(const Json& middle) {
  Json pages = Json::array();
  for (const Json& page : middle["pages"]) {
    Json blocks = Json::array();
    for (const Json& block : page["blocks"]) blocks.push_back(StructuredBlock(block));
    pages.push_back({{"page_idx", page["page_idx"]}, {"blocks", std::move(blocks)}});
  }
  return {{"pages", std::move(pages)},
          {"metadata", middle.value("metadata", Json::object())},
          {"extensions", middle.value("extensions", Json::object())},
          {"is_full_document", middle.value("is_full_document", true)}};
}

Json ContentList(const Json& middle) {
  Json out = Json::array();
  for (const Json& page : middle["pages"]) {
    const int page_idx = page.value("page_idx", 0);
    for (const Json& block : page["blocks"]) out.push_back(ContentListItem(block, page_idx));
  }
  return out;
}

}  // namespace mineru::pipeline::mineru4
