// pipeline/write/mineru_3_4/writer.h — MinerU 3.4.4's files as an OutputWriter: NAME_model.json,
// NAME.md, NAME_content_list.json, NAME_content_list_v2.json and NAME_middle.json (assemble.h).
#pragma once

#include <memory>

#include "pipeline/write/writer.h"

namespace mineru::pipeline {

std::unique_ptr<OutputWriter> MakeMinerU34Writer();

}  // namespace mineru::pipeline
