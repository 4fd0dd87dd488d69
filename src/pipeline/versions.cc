// pipeline/versions.cc — the versions registry (see versions.h): the only place that knows every
// extraction and output version folder.
#include "pipeline/versions.h"

#include "pipeline/extract/vlu_0_1/policy.h"
#include "pipeline/extract/vlu_1_2/policy.h"
#include "pipeline/write/mineru_2_5/writer.h"
#include "pipeline/write/mineru_3_4/writer.h"
#include "pipeline/write/mineru_4/writer.h"

namespace mineru::pipeline {

StatusOr<PipelineVersion> PipelineVersionNamed(std::string_view name, const VersionOptions& options) {
  PipelineVersion v;
  if (name == "1.2" || name == "1.2.1" || name == "3.4" || name == "3.4.4") {
    v.name = "1.2";
    v.extract = MakeVlUtils12Policy(options.image_analysis);
    v.writer = MakeMinerU34Writer();
    return v;
  }
  if (name == "4" || name == "4.x") {
    v.name = "4";
    v.extract = MakeVlUtils12Policy(options.image_analysis);
    v.writer = MakeMinerU4Writer();
    return v;
  }
  if (name == "0.1" || name == "0.1.17" || name == "2.5" || name == "2.5.4") {
    v.name = "0.1";
    v.extract = MakeVlUtils01Policy();
    v.writer = MakeMinerU25Writer();
    return v;
  }
  return InvalidArgumentError("unknown version \"" + std::string(name) + "\": choose " +
                              PipelineVersionChoices());
}

PipelineVersion DefaultPipelineVersion() {
  StatusOr<PipelineVersion> v = PipelineVersionNamed(kDefaultPipelineVersion);
  return std::move(v).value();
}

std::string PipelineVersionChoices() {
  return "1.2 (mineru-vl-utils 1.2.1, MinerU 3.4.4's files; the default), 4 (the same extraction, MinerU 4's "
         "files: middle_json.json in Middle JSON 2.0, markdown.md, content_list.json, "
         "structured_content.json) "
         "or 0.1 (mineru-vl-utils 0.1.17, MinerU 2.5.4's files)";
}

}  // namespace mineru::pipeline
