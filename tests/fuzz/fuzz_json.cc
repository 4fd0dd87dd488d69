// libFuzzer target: base/json_parse.h, the reader of every JSON from outside. Small limits so the
// depth and cost refusals are reached; every number of a parsed value goes through the range
// readers; a parsed value must be within the depth limit and survive a dump and a re-parse.
#include <cassert>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/json_parse.h"

namespace {

using Json = nlohmann::json;

// Depth of v without recursion (containers count, the root container is 1).
int Depth(const Json& v) {
  int deepest = 0;
  std::vector<std::pair<const Json*, int>> todo = {{&v, v.is_structured() ? 1 : 0}};
  while (!todo.empty()) {
    auto [j, d] = todo.back();
    todo.pop_back();
    deepest = std::max(deepest, d);
    if (!j->is_structured()) {
      if (j->is_number()) {
        (void)mineru::JsonIntegerIn(*j, -(1 << 30), 1 << 30, "n");
        (void)mineru::JsonIntegerIn(*j, 0, INT64_MAX, "n");
        (void)mineru::JsonNumberIn(*j, -2, 2, "x");
      }
      continue;
    }
    for (const Json& c : *j) todo.push_back({&c, c.is_structured() ? d + 1 : d});
  }
  return deepest;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  mineru::JsonLimits lim = mineru::RequestJsonLimits(size);
  lim.max_depth = 8;
  lim.max_cost_bytes = size * 16 + 4096;
  Json v;
  if (!mineru::ParseJson(text, lim, &v).ok()) return 0;
  if (Depth(v) > lim.max_depth) __builtin_trap();
  Json again;
  if (!mineru::ParseJson(v.dump(-1, ' ', false, Json::error_handler_t::replace), {}, &again).ok()) {
    __builtin_trap();
  }
  return 0;
}
