// Layout parsing, stage II decisions and crop geometry, against expectations derived by hand from
// mineru-vl-utils 0.1.x (parse_layout_output, prepare_for_extract, resize_by_need) and Pillow.
#include <gtest/gtest.h>

#include "../util/replay.h"
#include "pipeline/common/crop_geometry.h"
#include "pipeline/extract/vlu_0_1/layout.h"

namespace mineru::pipeline {
namespace {

using ::mineru::testing::LayoutLine;

TEST(Layout, MultiColumnPageKeepsReadingOrderAndScalesBoxes) {
  const std::string raw =
      LayoutLine("060 030 940 050", "header") + "\n" + LayoutLine("100 070 900 100", "title") + "\n" +
      LayoutLine("060 110 480 500", "text") + "\n" + LayoutLine("520 110 940 500", "text") + "\n" +
      LayoutLine("480 950 520 970", "page_number");
  const auto blocks = ParseLayoutOutput(raw);
  ASSERT_EQ(blocks.size(), 5u);
  // The list order is the reading order: left column before right column.
  EXPECT_EQ(blocks[0].type, "header");
  EXPECT_EQ(blocks[1].type, "title");
  EXPECT_EQ(blocks[2].type, "text");
  EXPECT_EQ(blocks[3].type, "text");
  EXPECT_EQ(blocks[4].type, "page_number");
  // bbox = coordinate / 1000.0 (zero-padded digits parse as decimal integers).
  EXPECT_DOUBLE_EQ(blocks[2].x1, 60 / 1000.0);
  EXPECT_DOUBLE_EQ(blocks[2].y1, 110 / 1000.0);
  EXPECT_DOUBLE_EQ(blocks[2].x2, 480 / 1000.0);
  EXPECT_DOUBLE_EQ(blocks[2].y2, 500 / 1000.0);
  EXPECT_DOUBLE_EQ(blocks[3].x1, 0.52);
  for (const auto& b : blocks) EXPECT_EQ(b.angle, 0);
}

TEST(Layout, MalformedOutOfRangeSwappedDegenerateUnknownLines) {
  std::vector<std::string> lines = {
      "garbage before the layout",                  // no match: skipped
      LayoutLine("100 200 1001 300", "text"),       // 1001 > 1000: skipped
      LayoutLine("900 800 100 200", "Table"),       // swapped + uppercase: kept
      LayoutLine("100 200 100 300", "text"),        // x1 == x2: degenerate, skipped
      LayoutLine("100 200 300 200", "text"),        // y1 == y2: degenerate, skipped
      LayoutLine("100 200 300 400", "figure"),      // unknown type: skipped
      LayoutLine("100 200 300 400", "text2"),       // unknown type: skipped
      " " + LayoutLine("100 200 300 400", "text"),  // re.match anchors at ^: skipped
      LayoutLine("100 200 300 400", "text", ""),    // no rotation token: angle None
      LayoutLine("100 200 300 400", "text", "<|rotate_left|><|rotate_up|>"),    // up is tested first -> 0
      LayoutLine("100 200 300 400", "table", "<|rotate_right|>"),               // 90
      LayoutLine("100 200 300 400", "text", "<|rotate_down|>\r"),               // CR stays in the tail: 180
      LayoutLine("100 200 300 400", "text", "<|rotate_left|> trailing words"),  // extra text ignored: 270
      "<|box_start|>100 200 300<|box_end|><|ref_start|>text<|ref_end|><|rotate_up|>",  // 3 numbers
      "",                                                                              // empty line
  };
  std::string raw;
  for (size_t i = 0; i < lines.size(); ++i) raw += (i ? "\n" : "") + lines[i];
  std::vector<std::string> warnings;
  const auto blocks = ParseLayoutOutput(raw, &warnings);
  ASSERT_EQ(blocks.size(), 6u);
  EXPECT_EQ(blocks[0].type, "table");
  EXPECT_DOUBLE_EQ(blocks[0].x1, 0.1);
  EXPECT_DOUBLE_EQ(blocks[0].y1, 0.2);
  EXPECT_DOUBLE_EQ(blocks[0].x2, 0.9);
  EXPECT_DOUBLE_EQ(blocks[0].y2, 0.8);
  EXPECT_EQ(blocks[0].angle, 0);
  EXPECT_EQ(blocks[1].type, "text");
  EXPECT_FALSE(blocks[1].angle.has_value());
  EXPECT_EQ(blocks[2].angle, 0);
  EXPECT_EQ(blocks[3].angle, 90);
  EXPECT_EQ(blocks[4].angle, 180);
  EXPECT_EQ(blocks[5].angle, 270);
  // 9 skipped lines and 1 line without a rotation token.
  EXPECT_EQ(warnings.size(), 10u);
}

TEST(Layout, TabsBetweenCoordinatesAndTwoElementsOnOneLine) {
  const auto tabs = ParseLayoutOutput(LayoutLine("100\t200  300 400", "code"));
  ASSERT_EQ(tabs.size(), 1u);
  EXPECT_EQ(tabs[0].type, "code");
  // 0.1.x splits on "\n" only: a second element on the same line is swallowed by the first one's tail.
  const auto joined =
      ParseLayoutOutput(LayoutLine("001 001 002 002", "text") + LayoutLine("003 003 004 004", "title"));
  ASSERT_EQ(joined.size(), 1u);
  EXPECT_EQ(joined[0].type, "text");
  EXPECT_TRUE(ParseLayoutOutput("").empty());
}

TEST(Layout, KnownTypesAreThe22Of2509) {
  EXPECT_EQ(KnownBlockTypes().size(), 22u);
  EXPECT_TRUE(IsKnownBlockType("equation_block"));
  EXPECT_TRUE(IsKnownBlockType("phonetic"));
  EXPECT_FALSE(IsKnownBlockType("chart"));  // Pro-era type
}

TEST(Layout, RecognitionDecisionsPromptsAndSampling) {
  EXPECT_FALSE(ShouldRecognize("image"));
  EXPECT_FALSE(ShouldRecognize("list"));
  EXPECT_FALSE(ShouldRecognize("equation_block"));
  EXPECT_TRUE(ShouldRecognize("header"));
  EXPECT_TRUE(ShouldRecognize("image_caption"));
  EXPECT_FALSE(ShouldRecognize("text", {"text"}));
  EXPECT_TRUE(ShouldRecognize("text", {"bogus"}));

  EXPECT_EQ(PromptForType("table"), "\nTable Recognition:");
  EXPECT_EQ(PromptForType("equation"), "\nFormula Recognition:");
  EXPECT_EQ(PromptForType("title"), "\nText Recognition:");
  EXPECT_EQ(PromptForTask(Task::kLayout), "\nLayout Detection:");

  const MinerUSampling text = SamplingForType("text");
  EXPECT_FLOAT_EQ(text.presence_penalty, 1.0f);
  EXPECT_FLOAT_EQ(text.frequency_penalty, 0.05f);
  EXPECT_FLOAT_EQ(text.temperature, 0.0f);
  EXPECT_FLOAT_EQ(text.top_p, 0.01f);
  EXPECT_EQ(text.top_k, 1);
  EXPECT_FLOAT_EQ(text.repetition_penalty, 1.0f);
  EXPECT_EQ(text.no_repeat_ngram_size, 100);
  const MinerUSampling table = SamplingForType("table");
  EXPECT_FLOAT_EQ(table.presence_penalty, 1.0f);
  EXPECT_FLOAT_EQ(table.frequency_penalty, 0.005f);
  const MinerUSampling eq = SamplingForType("equation");
  EXPECT_FLOAT_EQ(eq.frequency_penalty, 0.05f);
  const MinerUSampling layout = SamplingForTask(Task::kLayout);
  EXPECT_FLOAT_EQ(layout.presence_penalty, 0.0f);
  EXPECT_FLOAT_EQ(layout.frequency_penalty, 0.0f);
  EXPECT_EQ(layout.no_repeat_ngram_size, 100);

  const auto blocks =
      ParseLayoutOutput(LayoutLine("0 0 10 10", "text") + "\n" + LayoutLine("0 0 10 10", "image") + "\n" +
                        LayoutLine("0 0 10 10", "table") + "\n" + LayoutLine("0 0 10 10", "list"));
  EXPECT_EQ(RecognitionIndices(blocks), (std::vector<size_t>{0, 2}));
}

TEST(CropGeometry, PillowRoundsFloatBoxesHalfToEven) {
  const PixelBox b = PillowCropBox(2.5, 3.5, 10.5, 11.5);
  EXPECT_EQ(b.x0, 2);  // round(2.5) == 2
  EXPECT_EQ(b.y0, 4);  // round(3.5) == 4
  EXPECT_EQ(b.x1, 10);
  EXPECT_EQ(b.y1, 12);
  // 0.2 * 2200 = 440.00000000000006 -> 440; 0.25 * 2200 = 550.
  const PixelBox s = StageTwoCropBox(0.1, 0.2, 0.5, 0.25, 1700, 2200);
  EXPECT_EQ(s.x0, 170);
  EXPECT_EQ(s.y0, 440);
  EXPECT_EQ(s.x1, 850);
  EXPECT_EQ(s.y1, 550);
  // 0.001 * 2500 is 2.5 in double -> round half even -> 2.
  EXPECT_EQ(StageTwoCropBox(0.001, 0.003, 0.5, 0.5, 2500, 2500).x0, 2);
  EXPECT_EQ(StageTwoCropBox(0.001, 0.003, 0.5, 0.5, 2500, 2500).y0, 8);  // 7.5 -> 8
}

TEST(CropGeometry, ResizeByNeedPadsLongStripsAndUpscalesSmallCrops) {
  // 1000x10: ratio 100 > 50 -> canvas 1000 x ceil(1000/50)=20, pasted at (0, int(10/2)=5);
  // short edge 20 < 28 -> scale 1.4 -> round(1400.0), round(28.0).
  auto p = PlanResizeByNeed(1000, 10);
  ASSERT_TRUE(p.has_value());
  EXPECT_TRUE(p->pad);
  EXPECT_EQ(p->pad_w, 1000);
  EXPECT_EQ(p->pad_h, 20);
  EXPECT_EQ(p->paste_x, 0);
  EXPECT_EQ(p->paste_y, 5);
  EXPECT_TRUE(p->upscale);
  EXPECT_EQ(p->out_w, 1400);
  EXPECT_EQ(p->out_h, 28);
  // Vertical strip 7 x 400: canvas ceil(400/50)=8 x 400, paste x = int((8-7)/2) = 0.
  p = PlanResizeByNeed(7, 400);
  EXPECT_EQ(p->pad_w, 8);
  EXPECT_EQ(p->paste_x, 0);
  EXPECT_EQ(p->out_w, 28);    // 8 * 3.5
  EXPECT_EQ(p->out_h, 1400);  // 400 * 3.5
  // 8 x 13: scale 3.5; 13 * 3.5 = 45.5 -> round half even -> 46 (0.1.x uses round, not ceil).
  p = PlanResizeByNeed(8, 13);
  EXPECT_FALSE(p->pad);
  EXPECT_EQ(p->out_w, 28);
  EXPECT_EQ(p->out_h, 46);
  p = PlanResizeByNeed(8, 11);  // 38.5 -> 38
  EXPECT_EQ(p->out_h, 38);
  // Big enough: untouched.
  p = PlanResizeByNeed(300, 40);
  EXPECT_FALSE(p->pad);
  EXPECT_FALSE(p->upscale);
  EXPECT_EQ(p->out_w, 300);
  EXPECT_EQ(p->out_h, 40);
  // Exactly ratio 50 is not padded (strictly greater is required).
  p = PlanResizeByNeed(1400, 28);
  EXPECT_FALSE(p->pad);
  EXPECT_FALSE(PlanResizeByNeed(0, 10).has_value());
}

TEST(CropGeometry, RotatedBlockSwapsSidesBeforeResize) {
  // A vertical margin note read bottom-to-top (<|rotate_left|> = 270): crop 30 x 476, rotate 270
  // counter-clockwise (expand) -> 476 x 30, no pad (ratio 15.8), no upscale.
  const CropPlan plan = PlanBlockCrop(0.010, 0.200, 0.040, 0.800, 270, 1000, 792);
  EXPECT_EQ(plan.box.x0, 10);
  EXPECT_EQ(plan.box.x1, 40);
  EXPECT_EQ(plan.box.y0, 158);  // 158.4 -> 158
  EXPECT_EQ(plan.box.y1, 634);  // 633.6 -> 634
  EXPECT_EQ(plan.rotate_ccw, 270);
  EXPECT_EQ(plan.rotated_w, 476);
  EXPECT_EQ(plan.rotated_h, 30);
  EXPECT_FALSE(plan.empty);
  EXPECT_EQ(plan.resize.out_w, 476);
  EXPECT_EQ(plan.resize.out_h, 30);
  // angle 0 / None: no rotation.
  EXPECT_EQ(PlanBlockCrop(0.1, 0.1, 0.2, 0.2, std::nullopt, 100, 100).rotate_ccw, 0);
  // A box thinner than a pixel after rounding is empty (the reference would divide by zero).
  EXPECT_TRUE(PlanBlockCrop(0.100, 0.100, 0.104, 0.200, 0, 100, 100).empty);
}

TEST(CropGeometry, AssemblyCropNaming) {
  const int bbox[4] = {318, 87, 575, 229};
  EXPECT_EQ(AssemblyCropHashInput("image", "0123abcd", 2, bbox), "image/0123abcd_2_318_87_575_229");
  const PixelBox px = AssemblyCropBox(bbox, 200.0 / 72.0);
  EXPECT_EQ(px.x0, 883);  // int(318 * 2.777...) = int(883.33)
  EXPECT_EQ(px.y0, 241);  // int(241.67)
  EXPECT_EQ(px.x1, 1597);
  EXPECT_EQ(px.y1, 636);
}

}  // namespace
}  // namespace mineru::pipeline
