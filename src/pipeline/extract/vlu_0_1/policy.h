// pipeline/extract/vlu_0_1/policy.h — mineru-vl-utils 0.1.17 as an ExtractionPolicy (the 2509
// checkpoint's outputs, MinerU 2.5.4): layout.h's parsing and requests, post_process.h's chain.
#pragma once

#include <memory>

#include "pipeline/extract/policy.h"

namespace mineru::pipeline {

std::unique_ptr<ExtractionPolicy> MakeVlUtils01Policy();

}  // namespace mineru::pipeline
