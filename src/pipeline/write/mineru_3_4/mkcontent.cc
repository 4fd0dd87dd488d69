// pipeline/write/mineru_3_4/mkcontent.cc — MinerU 3.4.4 union_make for the VLM backend
// (backend/vlm/vlm_middle_json_mkcontent.py): NAME.md (MM_MD), content_list.json (CONTENT_LIST) and
// content_list_v2.json (CONTENT_LIST_V2), with formula and table rendering on (the defaults).
#include <regex>

#include "pipeline/common/magic_model.h"
#include "pipeline/common/py_text.h"
#include "pipeline/write/mineru_3_4/assemble.h"
#include "pipeline/write/mineru_3_4/text_join.h"

namespace mineru::pipeline {

namespace {

using v34::MergeParaWithText;

using detail::MediaPath;
using detail::StrOr;
using detail::TypeOf;

// &lt; &gt; &amp; &quot; &#39; / &#NN; / &#xNN; (html.unescape for what table cells carry).
std::string HtmlUnescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    static const std::pair<const char*, const char*> kNamed[] = {
        {"&lt;", "<"},  {"&gt;", ">"},   {"&amp;", "&"},        {"&quot;", "\""},
        {"&#39;", "'"}, {"&#x27;", "'"}, {"&nbsp;", "\xC2\xA0"}};
    bool done = false;
    for (const auto& [from, to] : kNamed) {
      if (s.compare(i, std::char_traits<char>::length(from), from) == 0) {
        out += to;
        i += std::char_traits<char>::length(from);
        done = true;
        break;
      }
    }
    if (!done) out += s[i++];
  }
  return out;
}

// _format_embedded_html: src="X" (X not data:) -> src="dir/X"; <eq>..</eq> -> " $..$ ".
std::string FormatEmbeddedHtml(const std::string& html, const std::string& dir) {
  std::string s = html;
  if (!s.empty() && !dir.empty()) {
    static const std::regex kSrc("src=\"(?!data:)([^\"]+)\"");
    s = std::regex_replace(s, kSrc, "src=\"" + dir + "/$1\"");
  }
  std::string out;
  size_t i = 0;
  while (true) {
    const size_t a = s.find("<eq>", i);
    const size_t b = a == std::string::npos ? a : s.find("</eq>", a + 4);
    if (b == std::string::npos) break;
    out.append(s, i, a - i);
    out += " $" + HtmlUnescape(s.substr(a + 4, b - a - 4)) + "$ ";
    i = b + 5;
  }
  out.append(s, i, std::string::npos);
  return out;
}

int TitleLevel(const Json& block) {
  int level = 1;
  const auto it = block.find("level");
  if (it != block.end() && it->is_number_integer()) level = it->get<int>();
  return level > 4 ? 4 : (level < 1 ? 0 : level);
}

// get_body_data: (image_path, html/content) of the first media/text span of the first body.
std::pair<std::string, Json> BodyData(const Json& block) {
  auto from_lines = [](const Json& lines) -> std::pair<std::string, Json> {
    for (const auto& line : lines) {
      for (const auto& s : line["spans"]) {
        const std::string t = TypeOf(s);
        if (t == "table") return {StrOr(s, "image_path"), s.value("html", Json(""))};
        if (t == "chart" || t == "image" || t == "interline_equation")
          return {StrOr(s, "image_path"), s.value("content", Json(""))};
        if (t == "text") return {"", s.value("content", Json(""))};
      }
    }
    return {"", Json("")};
  };
  if (block.contains("blocks")) {
    for (const auto& b : block["blocks"]) {
      const std::string t = TypeOf(b);
      if (t != "image_body" && t != "table_body" && t != "chart_body" && t != "code_body") continue;
      auto r = from_lines(b.value("lines", Json::array()));
      if (!(r.first.empty() && r.second == Json(""))) return r;
    }
    return {"", Json("")};
  }
  return from_lines(block.value("lines", Json::array()));
}

std::string CodeMarkdown(Json& body, const Json& group) {
  const std::string sub = StrOr(group, "sub_type");
  if (sub == "algorithm") return v34::AlgorithmHtml(body);
  const std::string lang = group.contains("guess_lang") ? StrOr(group, "guess_lang") : "txt";
  return "```" + lang + "\n" + MergeParaWithText(body) + "\n```";
}

struct Segment {
  std::string text;
  bool html;
};

std::string Details(const Json& content, const std::string& summary) {
  if (!content.is_string() || py::IsBlank(content.get<std::string>())) return "";
  return "<details>\n<summary>" + summary + "</summary>\n\n" + content.get<std::string>() + "\n</details>";
}

void BodySegments(const Json& b, const Json& group, const std::string& dir, std::vector<Segment>& out) {
  const std::string bt = TypeOf(b);
  const std::string span_type = bt == "image_body" ? "image" : (bt == "chart_body" ? "chart" : "table");
  for (const auto& line : b["lines"]) {
    for (const auto& s : line["spans"]) {
      if (TypeOf(s) != span_type) continue;
      if (span_type == "table") {
        if (!StrOr(s, "html").empty())
          out.push_back({FormatEmbeddedHtml(StrOr(s, "html"), dir), true});
        else if (!StrOr(s, "image_path").empty())
          out.push_back({"![](" + MediaPath(dir, StrOr(s, "image_path")) + ")", false});
        continue;
      }
      const std::string media = MediaPath(dir, StrOr(s, "image_path"));
      if (!media.empty()) out.push_back({"![](" + media + ")", false});
      std::string summary = StrOr(group, "sub_type");
      if (summary.empty()) summary = span_type == "chart" ? "chart content" : "image content";
      const std::string d = Details(s.value("content", Json("")), summary);
      if (!d.empty()) out.push_back({d, true});
    }
  }
}

std::string VisualMarkdown(Json& group, const std::string& dir) {
  std::vector<Segment> segs;
  std::vector<Json*> members;
  for (auto& b : group["blocks"]) members.push_back(&b);
  std::stable_sort(members.begin(), members.end(), [](const Json* a, const Json* b) {
    return a->value("index", 1 << 30) < b->value("index", 1 << 30);
  });
  for (Json* b : members) {
    const std::string bt = TypeOf(*b);
    if (py::EndsWith(bt, "_caption") || py::EndsWith(bt, "_footnote")) {
      std::string t = MergeParaWithText(*b);
      if (!py::IsBlank(t)) segs.push_back({t, false});
    } else if (bt == "image_body" || bt == "chart_body" || bt == "table_body") {
      BodySegments(*b, group, dir, segs);
    } else if (bt == "code_body") {
      std::string t = CodeMarkdown(*b, group);
      if (!py::IsBlank(t)) segs.push_back({t, StrOr(group, "sub_type") == "algorithm"});
    }
  }
  std::string out;
  for (size_t i = 0; i < segs.size(); ++i) {
    if (!out.empty()) out += (segs[i].html || segs[i - 1].html) ? "\n\n" : "  \n";
    out += segs[i].text;
  }
  return out;
}

void PageMarkdown(Json& para_blocks, const std::string& dir, std::vector<std::string>& out) {
  for (auto& block : para_blocks) {
    const std::string type = TypeOf(block);
    std::string text;
    if (type == "text" || type == "interline_equation" || type == "phonetic" || type == "ref_text") {
      text = MergeParaWithText(block);
    } else if (type == "list") {
      for (auto& item : block["blocks"]) text += MergeParaWithText(item, false) + "  \n";
    } else if (type == "title") {
      text = std::string(static_cast<size_t>(TitleLevel(block)), '#') + " " + MergeParaWithText(block);
    } else if (type == "image" || type == "table" || type == "chart" || type == "code") {
      text = VisualMarkdown(block, dir);
    }
    if (py::IsBlank(text)) continue;
    out.emplace_back(py::Strip(text));
  }
}

Json BboxPermille(const Json& block, const Json& page_size) {
  const double w = page_size[0].get<double>(), h = page_size[1].get<double>();
  const Json& b = block["bbox"];
  return Json::array({static_cast<long long>(b[0].get<double>() * 1000 / w),
                      static_cast<long long>(b[1].get<double>() * 1000 / h),
                      static_cast<long long>(b[2].get<double>() * 1000 / w),
                      static_cast<long long>(b[3].get<double>() * 1000 / h)});
}

}  // namespace

Json ContentV1(Json& block, const std::string& dir, int page_idx,
               const Json& page_size);                                       // content_list.cc
Json ContentV2(Json& block, const std::string& dir, const Json& page_size);  // content_list.cc

OutputsV34 MakeOutputsV34(Json& middle, const std::string& image_dir) {
  OutputsV34 out;
  std::vector<std::string> parts;
  for (auto& page : middle["pdf_info"]) {
    if (page.contains("para_blocks") && !page["para_blocks"].empty())
      PageMarkdown(page["para_blocks"], image_dir, parts);
  }
  for (size_t i = 0; i < parts.size(); ++i) out.markdown += (i ? "\n\n" : "") + parts[i];
  out.content_list = Json::array();
  out.content_list_v2 = Json::array();
  for (int pass = 0; pass < 2; ++pass) {
    for (auto& page : middle["pdf_info"]) {
      Json page_v2 = Json::array();
      for (const char* key : {"para_blocks", "discarded_blocks"}) {
        if (!page.contains(key)) continue;
        for (auto& block : page[key]) {
          if (pass == 0)
            out.content_list.push_back(
                ContentV1(block, image_dir, page.value("page_idx", 0), page["page_size"]));
          else
            page_v2.push_back(ContentV2(block, image_dir, page["page_size"]));
        }
      }
      if (pass == 1) out.content_list_v2.push_back(std::move(page_v2));
    }
  }
  return out;
}

// Shared with content_list.cc.
std::string FormatEmbeddedHtmlV34(const std::string& html, const std::string& dir) {
  return FormatEmbeddedHtml(html, dir);
}
std::pair<std::string, Json> BodyDataV34(const Json& block) { return BodyData(block); }
Json BboxPermilleV34(const Json& block, const Json& page_size) { return BboxPermille(block, page_size); }
std::string CodeMarkdownV34(Json& body, const Json& group) { return CodeMarkdown(body, group); }
int TitleLevelV34(const Json& block) { return TitleLevel(block); }

}  // namespace mineru::pipeline
