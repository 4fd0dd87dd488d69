// pipeline/extract/vlu_0_1/policy.cc — mineru-vl-utils 0.1.17's two-step extraction (see policy.h).
#include "pipeline/extract/vlu_0_1/policy.h"

#include <string>
#include <utility>

#include "pipeline/extract/vlu_0_1/layout.h"
#include "pipeline/extract/vlu_0_1/post_process.h"

namespace mineru::pipeline {
namespace {

class VlUtils01Policy final : public ExtractionPolicy {
 public:
  std::string_view name() const override { return "0.1.17"; }
  std::string_view LayoutPrompt() const override { return PromptForTask(Task::kLayout); }
  MinerUSampling LayoutSampling() const override { return SamplingForTask(Task::kLayout); }

  // Every block that ShouldRecognize gets a request, except an empty crop: 0.1.x gives it an empty
  // content without asking.
  PagePlan PlanPage(std::string_view raw_layout, int page_w, int page_h) const override {
    PagePlan p;
    p.layout = ParseLayoutOutput(raw_layout);
    p.recognised.resize(p.layout.size());
    for (size_t idx : RecognitionIndices(p.layout)) {
      const LayoutBlock& b = p.layout[idx];
      ExtractRequest r;
      r.index = idx;
      r.crop = PlanBlockCrop(b.x1, b.y1, b.x2, b.y2, b.angle, page_w, page_h);
      if (r.crop.empty) {
        p.recognised[idx] = std::string();
        continue;
      }
      r.prompt = std::string(PromptForType(b.type));
      r.sampling = SamplingForType(b.type);
      p.requests.push_back(std::move(r));
    }
    return p;
  }

  std::vector<ContentBlock> PostProcess(
      const PagePlan& plan, const std::vector<TableImageTokens>& /*table_tokens*/) const override {
    return PostProcessPage(plan.layout, plan.recognised);
  }
};

}  // namespace

std::unique_ptr<ExtractionPolicy> MakeVlUtils01Policy() { return std::make_unique<VlUtils01Policy>(); }

}  // namespace mineru::pipeline
