// libFuzzer target: layout-output parsing and the whole post-processing chain (OTSL->HTML,
// formula fixes, equation blocks, assembly to middle.json / Markdown / content list) on the
// layout parsed from the input, with the input also used as every block's recognised text.
#include <optional>
#include <string>
#include <vector>

#include "pipeline/assemble.h"
#include "pipeline/formula.h"
#include "pipeline/layout.h"
#include "pipeline/otsl.h"
#include "pipeline/post_process.h"

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
  return 0;
}
