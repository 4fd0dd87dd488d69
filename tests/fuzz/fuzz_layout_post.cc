// libFuzzer target: layout-output parsing and the whole post-processing chain (OTSL->HTML,
// formula fixes, equation blocks, assembly to middle.json / Markdown / content list) on the
// layout parsed from the input, with the input also used as every block's recognised text; the same
// for the 1.2.1 extraction (layout_v12 + post_process_v12, Image Analysis tags included).
#include <optional>
#include <string>
#include <vector>

#include "pipeline/common/formula.h"
#include "pipeline/common/otsl.h"
#include "pipeline/common/py_text.h"
#include "pipeline/extract/vlu_0_1/layout.h"
#include "pipeline/extract/vlu_0_1/post_process.h"
#include "pipeline/extract/vlu_1_2/cross_page_table.h"
#include "pipeline/extract/vlu_1_2/layout.h"
#include "pipeline/extract/vlu_1_2/post_process.h"
#include "pipeline/write/mineru_2_5/assemble.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mineru::pipeline;
  const std::string s(reinterpret_cast<const char*>(data), size);
  (void)OtslToHtml(s);
  (void)FixEquation(s);
  std::vector<LayoutBlock> blocks = ParseLayoutOutput(s);
  std::vector<std::optional<std::string>> rec(blocks.size());
  for (size_t i : RecognitionIndices(blocks)) rec[i] = s;
  PageInput page;
  page.blocks = PostProcessPage(blocks, rec);
  page.width_pt = 612;
  page.height_pt = 792;
  Json middle = MiddleJson({page});
  (void)MarkdownFromMiddle(middle);
  (void)ContentListFromMiddle(middle);
  (void)DumpJson(ModelJson({page.blocks}));

  (void)FixEquationV12(s);
  (void)ProcessImageAnalysis(s);
  std::vector<LayoutBlock> v12 = ParseLayoutOutputV12(s);
  const ExtractPlan plan =
      PlanExtractV12(v12, 37 + static_cast<int>(size % 2000), 1 + static_cast<int>(size % 97));
  std::vector<std::optional<std::string>> rec12(v12.size());
  for (const auto& r : plan.requests) rec12[r.index] = s;
  (void)DumpJson(ModelJson({PostProcessPageV12(v12, rec12, plan.absorbed)}));

  // 1.2.1's cross-page table question: the input as the HTML of both tables (split in two), as the
  // model's answer, and through Python's repr.
  (void)py::Repr(s);
  std::vector<std::vector<ContentBlock>> pages(2);
  ContentBlock t;
  t.type = "table";
  t.bbox[2] = t.bbox[3] = 1;
  t.content = s.substr(0, size / 2);
  pages[0].push_back(t);
  t.content = s.substr(size / 2);
  pages[1].push_back(t);
  for (const CrossPageTask& task : CrossPageTableTasks(pages)) (void)CellMergeFromAnswer(task, s);
  (void)ParseCellMergeAnswer(s);
  return 0;
}
