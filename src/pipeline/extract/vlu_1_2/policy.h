// pipeline/extract/vlu_1_2/policy.h — mineru-vl-utils 1.2.1 as an ExtractionPolicy (MinerU 3.4.4's
// configuration): layout.h's parsing and request planning, post_process.h's chain, and the
// cross-page table questions (cross_page_table.h) once the document's pages are done.
#pragma once

#include <memory>

#include "pipeline/extract/policy.h"

namespace mineru::pipeline {

// image_analysis: send image and chart blocks to "\nImage Analysis:" (MinerU 3.4.4 does).
std::unique_ptr<ExtractionPolicy> MakeVlUtils12Policy(bool image_analysis = true);

}  // namespace mineru::pipeline
