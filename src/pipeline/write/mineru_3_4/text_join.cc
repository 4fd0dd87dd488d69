// pipeline/write/mineru_3_4/text_join.cc — MinerU 3.4.4 span joining: merge_para_with_text and
// merge_para_with_text_v2 (backend/vlm/vlm_middle_json_mkcontent.py), the Markdown escapes and the
// algorithm HTML (backend/utils/markdown_utils.py), full-width normalisation and the line-end hyphen
// test (utils/char_utils.py). Text spans are normalised in place, as MinerU does.
#include "pipeline/write/mineru_3_4/text_join.h"

#include "base/utf8.h"
#include "pipeline/common/py_text.h"
#include "pipeline/write/mineru_3_4/assemble.h"

namespace mineru::pipeline {

std::string DetectLangV34(std::string_view text) {
  if (text.empty()) return "";
  size_t total = 0, cjk = 0;
  for (size_t i = 0; i < text.size();) {
    int len = 1;
    const uint32_t cp = utf8::DecodeAt(text, i, &len);
    i += static_cast<size_t>(len > 0 ? len : 1);
    if (cp == '\n' || utf8::IsWhitespace(cp)) continue;
    ++total;
    if ((cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3040 && cp <= 0x30FF) || (cp >= 0xAC00 && cp <= 0xD7AF))
      ++cjk;
  }
  if (total == 0) return "en";
  return cjk * 10 >= total * 3 ? "zh" : "en";
}

namespace v34 {

std::string NormalizeText(const Json& content) {
  if (!content.is_string()) return "";
  const std::string s = content.get<std::string>();
  std::string out;
  for (size_t i = 0; i < s.size();) {
    int len = 1;
    uint32_t cp = utf8::DecodeAt(s, i, &len);
    if (len <= 0) len = 1;
    if ((cp >= 0xFF21 && cp <= 0xFF3A) || (cp >= 0xFF41 && cp <= 0xFF5A) || (cp >= 0xFF10 && cp <= 0xFF19)) {
      out += static_cast<char>(cp - 0xFEE0);
    } else {
      out.append(s, i, static_cast<size_t>(len));
    }
    i += static_cast<size_t>(len);
  }
  return out;
}

std::string EscapeConservative(const std::string& content) {
  std::string out;
  int backslashes = 0;
  for (char c : content) {
    if (c == '\\') {
      out += c;
      ++backslashes;
      continue;
    }
    if ((c == '*' || c == '_' || c == '`' || c == '~' || c == '$') && backslashes % 2 == 0) out += '\\';
    out += c;
    backslashes = 0;
  }
  return out;
}

// ^([ \t]{0,3})(#{1,6}|[+-])(?=[ \t]) -> a backslash before the marker.
std::string EscapePrefix(const std::string& s) {
  size_t i = 0;
  while (i < s.size() && i < 3 && (s[i] == ' ' || s[i] == '\t')) ++i;
  size_t j = i;
  if (j < s.size() && s[j] == '#') {
    while (j < s.size() && s[j] == '#' && j - i < 6) ++j;
  } else if (j < s.size() && (s[j] == '+' || s[j] == '-')) {
    ++j;
  } else {
    return s;
  }
  if (j >= s.size() || (s[j] != ' ' && s[j] != '\t')) return s;
  return s.substr(0, i) + "\\" + s.substr(i);
}

namespace {

using py::HtmlEscapeNoQuote;

bool IsHyphenAtLineEnd(std::string_view s) {  // [A-Za-z]+[-\u00ad\u2010\u2011\u2043]\s*$ on stripped text
  s = py::RStrip(s);
  if (s.empty()) return false;
  int len = 1;
  const uint32_t cp = utf8::DecodeBefore(s, s.size(), &len);
  if (!(cp == '-' || cp == 0xAD || cp == 0x2010 || cp == 0x2011 || cp == 0x2043)) return false;
  const size_t before = s.size() - static_cast<size_t>(len);
  return before > 0 && std::isalpha(static_cast<unsigned char>(s[before - 1])) &&
         static_cast<unsigned char>(s[before - 1]) < 0x80;
}

bool StartsLower(const std::string& s) {
  if (s.empty()) return false;
  int len = 1;
  const uint32_t cp = utf8::DecodeAt(s, 0, &len);
  if (cp < 0x80) return cp >= 'a' && cp <= 'z';
  return (cp >= 0xDF && cp <= 0xFF && cp != 0xF7) || (cp >= 0x3B1 && cp <= 0x3C9) ||
         (cp >= 0x430 && cp <= 0x44F);
}

std::string StrField(const Json& obj, const char* key) {
  const auto it = obj.find(key);
  return (it != obj.end() && it->is_string()) ? it->get<std::string>() : std::string();
}

// _has_following_joinable_span
bool HasFollowing(const Json& block, size_t li, size_t si) {
  const Json& lines = block["lines"];
  for (size_t l = li; l < lines.size(); ++l) {
    const Json& spans = lines[l]["spans"];
    for (size_t s = (l == li ? si + 1 : 0); s < spans.size(); ++s) {
      const std::string t = StrField(spans[s], "type");
      if (t == "text" && !py::IsBlank(NormalizeText(spans[s].value("content", Json())))) return true;
      if (t == "inline_equation" && !py::IsBlank(StrField(spans[s], "content"))) return true;
    }
  }
  return false;
}

// Normalises the TEXT spans in place and returns detect_lang of their concatenation.
std::string NormalizeSpans(Json& block) {
  std::string text;
  if (!block.contains("lines")) return "";
  for (auto& line : block["lines"]) {
    for (auto& span : line["spans"]) {
      if (StrField(span, "type") != "text") continue;
      span["content"] = NormalizeText(span.value("content", Json()));
      text += span["content"].get<std::string>();
    }
  }
  return DetectLangV34(py::ReplaceAll(text, "\n", ""));
}

bool IsCjk(const std::string& lang) { return lang == "zh" || lang == "ja" || lang == "ko"; }

// The next line's first span is TEXT and starts lower-case (the hyphen is then dropped).
bool NextLineStartsLower(const Json& lines, size_t li) {
  if (li + 1 >= lines.size()) return false;
  const Json& spans = lines[li + 1]["spans"];
  return !spans.empty() && StrField(spans[0], "type") == "text" && StartsLower(StrField(spans[0], "content"));
}

}  // namespace

std::string MergeParaWithText(Json& block, bool escape_prefix) {
  const std::string lang = NormalizeSpans(block);
  if (!block.contains("lines")) return "";
  const bool escape = StrField(block, "type") != "code_body";
  const Json& lines = block["lines"];
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    const Json& spans = lines[i]["spans"];
    for (size_t j = 0; j < spans.size(); ++j) {
      const std::string type = StrField(spans[j], "type");
      std::string content;
      if (type == "text") {
        content = StrField(spans[j], "content");
        if (escape) content = EscapeConservative(content);
      } else if (type == "inline_equation") {
        content = "$" + StrField(spans[j], "content") + "$";
      } else if (type == "interline_equation") {
        content = "\n$$\n" + StrField(spans[j], "content") + "\n$$\n";
      }
      content = std::string(py::Strip(content));
      if (content.empty()) continue;
      if (type == "interline_equation") {
        out += content;
        continue;
      }
      const bool last = j + 1 == spans.size();
      const bool follow = HasFollowing(block, i, j);
      if (IsCjk(lang)) {
        out += content;
        if (follow && (!last || type == "inline_equation")) out += ' ';
      } else if (last && type == "text" && IsHyphenAtLineEnd(content)) {
        out += NextLineStartsLower(lines, i) ? content.substr(0, content.size() - 1) : content;
      } else {
        out += content;
        if (follow) out += ' ';
      }
    }
  }
  if (escape_prefix && StrField(block, "type") == "text") out = EscapePrefix(out);
  return out;
}

Json MergeParaWithTextV2(Json& block) {
  const std::string lang = NormalizeSpans(block);
  Json out = Json::array();
  if (!block.contains("lines")) return out;
  const bool phonetic = StrField(block, "type") == "phonetic";
  const Json& lines = block["lines"];
  for (size_t i = 0; i < lines.size(); ++i) {
    const Json& spans = lines[i]["spans"];
    for (size_t j = 0; j < spans.size(); ++j) {
      const std::string content = StrField(spans[j], "content");
      if (py::IsBlank(content)) continue;
      std::string type = StrField(spans[j], "type");
      if (type == "text")
        type = phonetic ? "phonetic" : "text";
      else if (type == "inline_equation")
        type = "equation_inline";
      else
        continue;  // unknown span types are skipped (with a warning in MinerU)
      if (type != "text") {
        out.push_back(Json{{"type", type}, {"content", content}});
        continue;
      }
      const bool last = j + 1 == spans.size();
      const bool follow = HasFollowing(block, i, j);
      std::string piece = content;
      if (IsCjk(lang)) {
        if (follow && !last) piece += ' ';
      } else if (last && IsHyphenAtLineEnd(content)) {
        if (NextLineStartsLower(lines, i)) piece = content.substr(0, content.size() - 1);
      } else if (follow) {
        piece += ' ';
      }
      if (!out.empty() && out.back()["type"] == type) {
        out.back()["content"] = out.back()["content"].get<std::string>() + piece;
      } else {
        out.push_back(Json{{"type", type}, {"content", piece}});
      }
    }
  }
  return out;
}

// render_algorithm_html_from_lines (text spans normalised and HTML-escaped without quotes).
std::string AlgorithmHtml(Json& block) {
  std::string body;
  std::string prev_type;
  if (block.contains("lines")) {
    for (auto& line : block["lines"]) {
      for (auto& span : line["spans"]) {
        const std::string type = StrField(span, "type");
        std::string content = StrField(span, "content");
        if (type == "text") {
          content = NormalizeText(span.value("content", Json()));
          body += HtmlEscapeNoQuote(content);
          if (!content.empty()) prev_type = type;
        } else if (type == "inline_equation" && !py::IsBlank(content)) {
          if (prev_type == "inline_equation" && !body.empty() && body.back() != ' ' && body.back() != '\n' &&
              body.back() != '\t') {
            body += ' ';
          }
          body += "$" + HtmlEscapeNoQuote(content) + "$";
          prev_type = type;
        }
      }
    }
  }
  if (py::IsBlank(body)) return "";
  return "<div class=\"mineru-algorithm\" style=\"white-space: pre-wrap; font-family:monospace;\">\n" + body +
         "\n</div>";
}

}  // namespace v34
}  // namespace mineru::pipeline
