// pipeline/doc/json.h — JSON as MinerU writes it, and NAME_model.json (every version writes it the
// same way). The output writers' files are JSON; the document model itself is plain structs
// (blocks.h).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipeline/doc/blocks.h"

namespace mineru::pipeline {

// JSON with insertion-ordered keys, like Python dicts (MinerU writes its files with json.dumps).
using Json = nlohmann::ordered_json;

// NAME_model.json: a list of pages, each a list of {"type", "bbox": [x1,y1,x2,y2], "angle", "content"}
// (and merge_prev, sub_type, cell_merge after content when set).
Json ModelJson(const std::vector<std::vector<ContentBlock>>& pages);

// json.dumps(obj, ensure_ascii=False, indent=indent) as MinerU writes its files (invalid UTF-8 is
// replaced rather than throwing).
std::string DumpJson(const Json& j, int indent = 4);

}  // namespace mineru::pipeline
