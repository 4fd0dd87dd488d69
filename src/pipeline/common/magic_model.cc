// pipeline/common/magic_model.cc — MagicModel content helpers shared by the 2.5.4 and 3.4.4
// assemblies (see magic_model.h).
#include "pipeline/common/magic_model.h"

#include <algorithm>

#include "pipeline/common/py_text.h"

namespace mineru::pipeline {

namespace detail {

// ---- content cleaning (vlm_magic_model.py) ---------------------------------------------------------

// code_content_clean: drop a first line starting with ``` and a last line equal to ``` (after strip),
// join with "\n" and strip. None / "" -> "".
std::string CodeContentClean(const std::optional<std::string>& content) {
  if (!content || content->empty()) return "";
  const std::vector<std::string_view> lines = py::SplitLines(*content);
  size_t start = 0, end = lines.size();
  if (!lines.empty() && py::StartsWith(lines[0], "```")) start = 1;
  if (!lines.empty() && end > start && py::Strip(lines[end - 1]) == "```") --end;
  if (start >= end) return "";
  std::string joined;
  for (size_t i = start; i < end; ++i) {
    if (i > start) joined += '\n';
    joined.append(lines[i]);
  }
  return std::string(py::Strip(joined));
}

// isolated_formula_clean: drop a leading "\[" and a trailing "\]", then strip.
std::string IsolatedFormulaClean(std::string_view txt) {
  if (py::StartsWith(txt, "\\[")) txt.remove_prefix(2);
  if (py::EndsWith(txt, "\\]")) txt.remove_suffix(2);
  return std::string(py::Strip(txt));
}

// First match of `open(.{min,}?)close` at i where '.' excludes '\n'; returns the close position or npos.
size_t FindClose(std::string_view s, size_t i, std::string_view close, size_t min_inner) {
  const size_t inner = i + 2;
  const size_t k = s.find(close, inner + min_inner);
  if (k == std::string_view::npos) return k;
  const size_t nl = s.find('\n', inner);
  if (nl != std::string_view::npos && nl < k) return std::string_view::npos;
  return k;
}

// clean_content: when "\[" and "\]" counts agree and are > 0, every `\\\[(.*?)\\\]` becomes "[inner]".
std::string CleanContent(const std::string& content) {
  const size_t opens = py::Count(content, "\\[");
  if (opens == 0 || opens != py::Count(content, "\\]")) return content;
  std::string out;
  const std::string_view s = content;
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, 2, "\\[") == 0) {
      const size_t k = FindClose(s, i, "\\]", 0);
      if (k != std::string_view::npos) {
        out += '[';
        out.append(s.substr(i + 2, k - i - 2));
        out += ']';
        i = k + 2;
        continue;
      }
    }
    out += s[i++];
  }
  return out;
}

// A copy of `obj` without `key` (used instead of ordered_json::erase, whose in-place shifting of
// ordered_map entries is fragile in the installed nlohmann version).
Json WithoutKey(const Json& obj, const char* key) {
  Json out = Json::object();
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (it.key() != key) out[it.key()] = it.value();
  }
  return out;
}

Json BoxJson(const IBox& b) { return Json::array({b[0], b[1], b[2], b[3]}); }

Json TextSpan(const IBox& b, const char* type, const std::optional<std::string>& content) {
  Json span = Json::object();
  span["bbox"] = BoxJson(b);
  span["type"] = type;
  span["content"] = content ? Json(*content) : Json(nullptr);
  return span;
}

// The text branch of MagicModel: clean_content, then split on balanced \( \) into text and
// inline_equation spans (re.finditer(r'\\\((.+?)\\\)')).
std::vector<Json> TextSpans(const IBox& bbox, const char* span_type, std::optional<std::string> content) {
  if (content && !content->empty()) content = CleanContent(*content);
  const bool split = content && !content->empty() && py::Count(*content, "\\(") > 0 &&
                     py::Count(*content, "\\(") == py::Count(*content, "\\)");
  if (!split) return {TextSpan(bbox, span_type, content)};
  const std::string_view s = *content;
  std::vector<Json> spans;
  size_t last_end = 0;
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, 2, "\\(") != 0) {
      ++i;
      continue;
    }
    const size_t k = FindClose(s, i, "\\)", 1);
    if (k == std::string_view::npos) {
      ++i;
      continue;
    }
    if (i > last_end) {
      const std::string_view before = s.substr(last_end, i - last_end);
      if (!py::IsBlank(before)) spans.push_back(TextSpan(bbox, "text", std::string(before)));
    }
    spans.push_back(TextSpan(bbox, "inline_equation", std::string(py::Strip(s.substr(i + 2, k - i - 2)))));
    last_end = k + 2;
    i = last_end;
  }
  if (last_end < s.size()) {
    const std::string_view after = s.substr(last_end);
    if (!py::IsBlank(after)) spans.push_back(TextSpan(bbox, "text", std::string(after)));
  }
  return spans;
}

}  // namespace detail

}  // namespace mineru::pipeline
