// pipeline/write/mineru_4/writer.h — MinerU 4's files as an OutputWriter: middle_json.json (DocVortex
// Middle JSON 2.0, middle2.h), markdown.md, content_list.json and structured_content.json
// (render.h), with the crops under images/ — the contents of MinerU 4's result ZIP.
#pragma once

#include <memory>

#include "pipeline/write/writer.h"

namespace mineru::pipeline {

std::unique_ptr<OutputWriter> MakeMinerU4Writer();

}  // namespace mineru::pipeline
