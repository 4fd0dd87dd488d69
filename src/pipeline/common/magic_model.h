// pipeline/common/magic_model.h — MagicModel content helpers shared by the 2.5.4
// (write/mineru_2_5/) and 3.4.4 (write/mineru_3_4/) assemblies; identical in both MinerU versions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/common/box_relations.h"
#include "pipeline/doc/json.h"

namespace mineru::pipeline::detail {

// code_content_clean: drop a leading ``` line and a trailing ``` line, join, strip. None/"" -> "".
std::string CodeContentClean(const std::optional<std::string>& content);
// isolated_formula_clean: drop a leading "\[" and a trailing "\]", then strip.
std::string IsolatedFormulaClean(std::string_view txt);
// The text branch: clean_content, then a split on balanced \( \) into text / inline_equation spans
// ({"bbox", "type", "content"}); otherwise one span of span_type.
std::vector<Json> TextSpans(const IBox& bbox, const char* span_type, std::optional<std::string> content);
Json BoxJson(const IBox& b);
// clean_content: balanced \\[..\\] pairs become [..].
std::string CleanContent(const std::string& content);
// A copy of obj without key (keeps the order of the other keys).
Json WithoutKey(const Json& obj, const char* key);

// obj[key] when obj is an object holding a string there, else "" (Python's .get(key, "") on JSON).
inline std::string StrOr(const Json& obj, const char* key) {
  if (!obj.is_object()) return "";
  const auto it = obj.find(key);
  return (it != obj.end() && it->is_string()) ? it->get<std::string>() : std::string();
}
inline std::string TypeOf(const Json& obj) { return StrOr(obj, "type"); }
// A file under dir ("" when path is empty; path itself when dir is empty).
inline std::string MediaPath(const std::string& dir, const std::string& path) {
  if (path.empty()) return "";
  return dir.empty() ? path : dir + "/" + path;
}

}  // namespace mineru::pipeline::detail
