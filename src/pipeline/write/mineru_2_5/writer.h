// pipeline/write/mineru_2_5/writer.h — MinerU 2.5.4's files as an OutputWriter: NAME_model.json,
// NAME_middle.json, NAME_content_list.json and NAME.md (assemble.h).
#pragma once

#include <memory>

#include "pipeline/write/writer.h"

namespace mineru::pipeline {

std::unique_ptr<OutputWriter> MakeMinerU25Writer();

}  // namespace mineru::pipeline
