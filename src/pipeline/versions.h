// pipeline/versions.h — the one version setting: which mineru-vl-utils extraction runs and which
// MinerU files are written, chosen once (by `parse`, `serve` and the library alike) and carried as a
// value to the driver, which never asks which version it runs.
//
//   "1.2" (the default): mineru-vl-utils 1.2.1's extraction, MinerU 3.4.4's files.
//   "0.1":               mineru-vl-utils 0.1.17's extraction, MinerU 2.5.4's files (the 2509
//                        checkpoint's reference outputs).
//   "4":                 mineru-vl-utils 1.2.1's extraction, MinerU 4's files (Middle JSON 2.0;
//                        becomes the default once the 4.x files are complete).
// The MinerU versions name the same pairs: "3.4", "3.4.4" and "2.5", "2.5.4".
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "pipeline/extract/policy.h"
#include "pipeline/write/writer.h"

namespace mineru::pipeline {

inline constexpr std::string_view kDefaultPipelineVersion = "4";

struct PipelineVersion {
  std::string name;  // the setting as the user writes it, canonical: "1.2" or "0.1"
  std::shared_ptr<const ExtractionPolicy> extract;
  std::shared_ptr<const OutputWriter> writer;
};

struct VersionOptions {
  bool image_analysis = true;  // 1.2: send image/chart blocks to "\nImage Analysis:"
};

// The pair a setting names; an unknown name is InvalidArgument, naming the choices.
StatusOr<PipelineVersion> PipelineVersionNamed(std::string_view name, const VersionOptions& options = {});

// kDefaultPipelineVersion's pair.
PipelineVersion DefaultPipelineVersion();

// "1.2 (mineru-vl-utils 1.2.1, MinerU 3.4.4's files) or 0.1 (...)": for help texts and errors.
std::string PipelineVersionChoices();

}  // namespace mineru::pipeline
