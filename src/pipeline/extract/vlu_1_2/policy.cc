// pipeline/extract/vlu_1_2/policy.cc — mineru-vl-utils 1.2.1's two-step extraction (see policy.h).
#include "pipeline/extract/vlu_1_2/policy.h"

#include <optional>
#include <utility>

#include "pipeline/extract/vlu_1_2/cross_page_table.h"
#include "pipeline/extract/vlu_1_2/layout.h"
#include "pipeline/extract/vlu_1_2/post_process.h"

namespace mineru::pipeline {
namespace {

class VlUtils12Policy final : public ExtractionPolicy {
 public:
  explicit VlUtils12Policy(bool image_analysis) : image_analysis_(image_analysis) {}

  std::string_view name() const override { return "1.2.1"; }
  std::string_view LayoutPrompt() const override { return "\nLayout Detection:"; }
  MinerUSampling LayoutSampling() const override { return MinerUSampling(); }

  PagePlan PlanPage(std::string_view raw_layout, int page_w, int page_h) const override {
    PagePlan p;
    p.layout = ParseLayoutOutputV12(raw_layout);
    ExtractPlan e = PlanExtractV12(p.layout, page_w, page_h, image_analysis_);
    p.requests = std::move(e.requests);
    p.absorbed = std::move(e.absorbed);
    p.recognised.resize(p.layout.size());
    return p;
  }

  std::vector<ContentBlock> PostProcess(const PagePlan& plan,
                                        const std::vector<TableImageTokens>& table_tokens) const override {
    return PostProcessPageV12(plan.layout, plan.recognised, plan.absorbed, table_tokens);
  }

  // 1.2.1's cross-page table questions, asked together once every page is done (as the client does
  // at the end of its batch). Pairs must be pages next to each other in the file. An answer becomes
  // cell_merge on the second table; a malformed answer leaves the tables as they were.
  std::vector<DocumentQuestion> DocumentQuestions(const std::vector<std::vector<ContentBlock>>& pages,
                                                  const std::vector<int>& page_numbers) const override {
    std::vector<DocumentQuestion> out;
    for (CrossPageTask& t : CrossPageTableTasks(pages)) {
      if (page_numbers[t.curr_page] != page_numbers[t.prev_page] + 1) continue;
      DocumentQuestion q;
      q.page = t.curr_page;
      q.prompt = t.prompt;
      q.sampling = CrossPageSampling();
      q.apply = [t](std::string_view answer, std::vector<std::vector<ContentBlock>>* doc) {
        const std::optional<std::vector<int>> cell_merge = CellMergeFromAnswer(t, answer);
        if (cell_merge) (*doc)[t.curr_page][t.curr_block].cell_merge = cell_merge;
      };
      out.push_back(std::move(q));
    }
    return out;
  }

 private:
  bool image_analysis_;
};

}  // namespace

std::unique_ptr<ExtractionPolicy> MakeVlUtils12Policy(bool image_analysis) {
  return std::make_unique<VlUtils12Policy>(image_analysis);
}

}  // namespace mineru::pipeline
