// A realistic replayed page through the whole model-free half: layout text + recognition outputs ->
// post-processing (model.json) -> MinerU assembly (middle.json, Markdown, content_list.json).
// Every expectation is derived by hand from the reference code paths named in the comments.
#include <gtest/gtest.h>

#include "../util/replay.h"
#include "pipeline/doc/json.h"
#include "pipeline/extract/vlu_0_1/post_process.h"
#include "pipeline/write/mineru_2_5/assemble.h"

namespace mineru::pipeline {
namespace {

// A layout answer line (LayoutLine) ending in a newline, so that lines add up to an answer.
std::string LayoutLineNl(const char* coords, const char* type, const char* rot = "<|rotate_up|>") {
  return ::mineru::testing::LayoutLine(coords, type, rot) + "\n";
}

// Page 0 of the replay: 18 layout elements, in reading order.
std::string Page0Layout() {
  return LayoutLineNl("060 030 940 050", "header") +                        // 0
         LayoutLineNl("100 070 900 100", "title") +                         // 1
         LayoutLineNl("060 110 480 300", "text") +                          // 2 left column
         LayoutLineNl("100 310 900 420", "equation_block") +                // 3 (not recognised)
         LayoutLineNl("120 315 880 360", "equation") +                      // 4 inside 3
         LayoutLineNl("120 365 880 410", "equation") +                      // 5 inside 3
         LayoutLineNl("200 430 800 470", "equation") +                      // 6 standalone, \tag
         LayoutLineNl("100 480 900 495", "table_caption") +                 // 7
         LayoutLineNl("100 500 900 600", "table") +                         // 8
         LayoutLineNl("520 110 940 290", "image") +                         // 9 right column (not recognised)
         LayoutLineNl("520 292 940 305", "image_caption") +                 // 10
         LayoutLineNl("100 610 900 700", "code") +                          // 11
         LayoutLineNl("100 710 900 800", "list") +                          // 12 (not recognised)
         LayoutLineNl("110 715 890 750", "text") +                          // 13 inside the list
         LayoutLineNl("110 755 890 795", "text") +                          // 14 inside the list
         LayoutLineNl("480 950 520 970", "page_number") +                   // 15
         LayoutLineNl("060 975 940 990", "footer") +                        // 16
         LayoutLineNl("010 200 040 800", "aside_text", "<|rotate_left|>");  // 17 rotated margin text
}

// Recognition outputs, one per recognised block in layout order (the replay "blocks" list).
std::vector<std::string> Page0Outputs() {
  return {
      "Running head",                                       // 0 header
      "1 Introduction",                                     // 1 title
      "The energy \\(E=mc^2\\) relates mass and \\(c\\).",  // 2 text with inline math
      "a+b=c \\tag{1}",                                     // 4
      "d+e=f \\tag{2}",                                     // 5
      "E<mc^{2} \\tag{3}",                                  // 6
      "Table 1: Results",                                   // 7
      "<fcel>Model<fcel>Score<nl><fcel>A<fcel>0.9<nl>",     // 8 OTSL
      "Figure 1: Setup",                                    // 10
      "```python\ndef f(x):\n    return x\n```",            // 11 fenced code
      "- first item",                                       // 13
      "- second \\(x_1\\) item",                            // 14
      "1",                                                  // 15
      "Footer text",                                        // 16
      "arXiv:2509.22186v2",                                 // 17
  };
}

const char* kTableHtml =
    "<table><tr><td>Model</td><td>Score</td></tr><tr><td>A</td><td>0.9</td></tr></table>";
const char* kMergedEq = "\\begin{array}{l} a+b=c (1) \\\\ d+e=f (2) \\\\ \\end{array}";

std::vector<ContentBlock> Page0Blocks() {
  const auto layout = ParseLayoutOutput(Page0Layout());
  EXPECT_EQ(layout.size(), 18u);  // the trailing empty line after the last "\n" is skipped
  auto per_block = AssignRecognised(layout, Page0Outputs());
  EXPECT_TRUE(per_block.ok());
  return PostProcessPage(layout, *per_block);
}

TEST(PostProcess, ReplayCountMismatchIsAnError) {
  const auto layout = ParseLayoutOutput(Page0Layout());
  auto outputs = Page0Outputs();
  outputs.pop_back();
  EXPECT_FALSE(AssignRecognised(layout, outputs).ok());
}

TEST(PostProcess, ModelJsonOfTheReplayedPage) {
  const std::vector<ContentBlock> blocks = Page0Blocks();
  // equation_block 3 absorbs equations 4 and 5 (each fully inside) and is replaced by one equation;
  // 18 - 2 = 16 blocks remain.
  ASSERT_EQ(blocks.size(), 16u);
  const std::vector<std::string> types = {
      "header",        "title", "text", "equation", "equation", "table_caption", "table",  "image",
      "image_caption", "code",  "list", "text",     "text",     "page_number",   "footer", "aside_text"};
  for (size_t i = 0; i < types.size(); ++i) EXPECT_EQ(blocks[i].type, types[i]) << i;

  // Merged equation: bbox/angle of the equation_block, two \tag -> (1), (2), then \[ \n ... \n \].
  EXPECT_DOUBLE_EQ(blocks[3].bbox[0], 0.1);
  EXPECT_DOUBLE_EQ(blocks[3].bbox[1], 0.31);
  EXPECT_DOUBLE_EQ(blocks[3].bbox[3], 0.42);
  EXPECT_EQ(*blocks[3].content, std::string("\\[\n") + kMergedEq + "\n\\]");
  // Standalone equation: "<" -> "< ", \tag kept, bracketed.
  EXPECT_EQ(*blocks[4].content, "\\[\nE< mc^{2} \\tag{3}\n\\]");
  // Table OTSL -> HTML.
  EXPECT_EQ(*blocks[6].content, kTableHtml);
  // Not recognised: content stays None.
  EXPECT_FALSE(blocks[7].content.has_value());   // image
  EXPECT_FALSE(blocks[10].content.has_value());  // list
  // Text and code are untouched by post-processing (fences are MinerU's job).
  EXPECT_EQ(*blocks[2].content, "The energy \\(E=mc^2\\) relates mass and \\(c\\).");
  EXPECT_EQ(*blocks[9].content, "```python\ndef f(x):\n    return x\n```");
  EXPECT_EQ(blocks[15].angle, 270);

  const Json model = ModelJson({blocks});
  ASSERT_EQ(model.size(), 1u);
  EXPECT_EQ(model[0][0].dump(),
            R"({"type":"header","bbox":[0.06,0.03,0.94,0.05],"angle":0,"content":"Running head"})");
  EXPECT_EQ(model[0][7].dump(), R"({"type":"image","bbox":[0.52,0.11,0.94,0.29],"angle":0,"content":null})");
}

TEST(PostProcess, OptionsAndAngleNone) {
  const auto layout =
      ParseLayoutOutput(LayoutLineNl("0 0 10 10", "header", "") + LayoutLineNl("0 0 10 10", "list") +
                        LayoutLineNl("0 0 10 10", "equation_block") + LayoutLineNl("0 0 10 10", "text"));
  const std::vector<std::optional<std::string>> rec = {std::string("h"), std::nullopt, std::nullopt,
                                                       std::string("t")};
  PostProcessOptions opt;
  opt.abandon_list = true;
  opt.abandon_paratext = true;
  const auto out = PostProcessPage(layout, rec, opt);
  ASSERT_EQ(out.size(), 1u);  // header (paratext), list and equation_block (single, no merge) dropped
  EXPECT_EQ(out[0].type, "text");
  const auto kept = PostProcessPage(layout, rec);
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(ModelJson({kept})[0][0].dump(),
            R"({"type":"header","bbox":[0.0,0.0,0.01,0.01],"angle":null,"content":"h"})");
}

TEST(PostProcess, DumpMatchesPythonJsonDumpsIndent4) {
  ContentBlock b;
  b.type = "text";
  b.bbox[0] = 0.1;
  b.bbox[1] = 0.2;
  b.bbox[2] = 0.3;
  b.bbox[3] = 1.0;
  b.angle = 0;
  b.content = "caf\xc3\xa9 \"q\"\n";
  // json.dumps([[block]], ensure_ascii=False, indent=4)
  EXPECT_EQ(
      DumpJson(ModelJson({{b}, {}})),
      "[\n    [\n        {\n            \"type\": \"text\",\n            \"bbox\": [\n                0.1,\n"
      "                0.2,\n                0.3,\n                1.0\n            ],\n"
      "            \"angle\": 0,\n            \"content\": \"caf\xc3\xa9 \\\"q\\\"\\n\"\n        }\n    ],\n"
      "    []\n]");
}

// ---- assembly -------------------------------------------------------------------------------------

struct Recorder {
  std::vector<CropRequest> calls;
  std::string operator()(const CropRequest& r) {
    calls.push_back(r);
    return r.span_type + "-" + std::to_string(r.bbox[0]) + ".jpg";
  }
};

Json BuildMiddle(Recorder& rec) {
  PageInput p0;
  p0.blocks = Page0Blocks();
  p0.width_pt = 612.0;
  p0.height_pt = 792.0;
  p0.page_idx = 0;
  PageInput p1;
  const auto layout1 = ParseLayoutOutput(LayoutLineNl("100 100 900 200", "text"));
  p1.blocks = PostProcessPage(layout1, {std::string("Second page text.")});
  p1.width_pt = 595.3;  // A4: int() truncates to 595 x 841
  p1.height_pt = 841.9;
  p1.page_idx = 1;
  AssembleOptions opt;
  opt.image_path = [&rec](const CropRequest& r) { return rec(r); };
  return MiddleJson({p0, p1}, opt);
}

TEST(Assemble, MiddleJsonStructure) {
  Recorder rec;
  const Json middle = BuildMiddle(rec);
  EXPECT_EQ(middle["_backend"], "vlm");
  EXPECT_EQ(middle["_version_name"], "2.5.4");
  ASSERT_EQ(middle["pdf_info"].size(), 2u);
  const Json& page = middle["pdf_info"][0];
  EXPECT_EQ(page["page_size"].dump(), "[612,792]");
  EXPECT_EQ(page["page_idx"], 0);
  EXPECT_EQ(middle["pdf_info"][1]["page_size"].dump(), "[595,841]");

  // Crops are requested for every equation, table and image span, in block order, with point boxes
  // int(x * 612), int(y * 792).
  ASSERT_EQ(rec.calls.size(), 4u);
  EXPECT_EQ(rec.calls[0].span_type, "interline_equation");
  EXPECT_EQ(rec.calls[0].bbox[1], 245);  // merged equation: the equation_block's box
  EXPECT_EQ(rec.calls[1].span_type, "interline_equation");
  EXPECT_EQ(rec.calls[2].span_type, "table");
  EXPECT_EQ(rec.calls[3].span_type, "image");
  EXPECT_EQ(rec.calls[3].bbox[0], 318);

  // para_blocks sorted by layout index; the caption of the table (7) and image (10) are absorbed into
  // their groups; list children (13, 14) into the list; discarded types go to discarded_blocks.
  const Json& para = page["para_blocks"];
  std::vector<int> indices;
  for (const auto& b : para) indices.push_back(b["index"]);
  EXPECT_EQ(indices, (std::vector<int>{1, 2, 3, 4, 6, 7, 9, 10}));
  // (indices are positions in the post-processed list: 3 = merged equation, 4 = equation 6, ...)

  const Json& title = para[0];
  EXPECT_EQ(
      title.dump(),
      R"({"bbox":[61,55,550,79],"type":"title","angle":0,"lines":[{"bbox":[61,55,550,79],"spans":[{"bbox":[61,55,550,79],"type":"text","content":"1 Introduction"}]}],"index":1})");

  // Inline math split on balanced \( \): text / inline_equation spans, text kept unstripped.
  const Json& spans = para[1]["lines"][0]["spans"];
  ASSERT_EQ(spans.size(), 5u);
  EXPECT_EQ(spans[0]["content"], "The energy ");
  EXPECT_EQ(spans[1]["type"], "inline_equation");
  EXPECT_EQ(spans[1]["content"], "E=mc^2");
  EXPECT_EQ(spans[2]["content"], " relates mass and ");
  EXPECT_EQ(spans[3]["content"], "c");
  EXPECT_EQ(spans[4]["content"], ".");

  // Interline equation: \[ \] removed; image_path from the crop callback.
  EXPECT_EQ(para[2]["type"], "interline_equation");
  EXPECT_EQ(para[2]["lines"][0]["spans"][0].dump(),
            std::string(R"({"bbox":[61,245,550,332],"type":"interline_equation","content":")") +
                "\\\\begin{array}{l} a+b=c (1) \\\\\\\\ d+e=f (2) \\\\\\\\ \\\\end{array}" +
                R"(","image_path":"interline_equation-61.jpg"})");

  // Table group: caption tied by distance; body first, then caption.
  const Json& table = para[4];
  EXPECT_EQ(table["type"], "table");
  EXPECT_EQ(table["index"], 6);
  ASSERT_EQ(table["blocks"].size(), 2u);
  EXPECT_EQ(table["blocks"][0]["type"], "table_body");
  EXPECT_EQ(table["blocks"][1]["type"], "table_caption");
  EXPECT_EQ(table["blocks"][1]["index"], 5);
  EXPECT_EQ(
      table["blocks"][0].dump(),
      std::string(
          R"({"bbox":[61,396,550,475],"lines":[{"bbox":[61,396,550,475],"spans":[{"bbox":[61,396,550,475],"type":"table","html":")") +
          kTableHtml + R"(","image_path":"table-61.jpg"}]}],"index":6,"angle":0,"type":"table_body"})");

  // Image group with its caption.
  const Json& image = para[5];
  EXPECT_EQ(image["type"], "image");
  EXPECT_EQ(image["blocks"][1]["type"], "image_caption");

  // Code: fences stripped, language guessed, sub_type on the group, no "extra" left in the body line.
  const Json& code = para[6];
  EXPECT_EQ(code["type"], "code");
  EXPECT_EQ(code["sub_type"], "code");
  EXPECT_EQ(code["guess_lang"], "python");
  EXPECT_EQ(code["blocks"][0]["lines"][0]["spans"][0]["content"], "def f(x):\n    return x");
  EXPECT_FALSE(code["blocks"][0]["lines"][0].contains("extra"));
  std::vector<std::string> code_keys;
  for (auto it = code.begin(); it != code.end(); ++it) code_keys.push_back(it.key());
  EXPECT_EQ(code_keys,
            (std::vector<std::string>{"type", "bbox", "blocks", "index", "sub_type", "guess_lang"}));

  // List: children >= 80% inside, sub_type = most common child type, "lines" removed.
  const Json& list = para[7];
  EXPECT_EQ(list["type"], "list");
  EXPECT_EQ(list["sub_type"], "text");
  ASSERT_EQ(list["blocks"].size(), 2u);
  EXPECT_FALSE(list.contains("lines"));
  std::vector<std::string> list_keys;
  for (auto it = list.begin(); it != list.end(); ++it) list_keys.push_back(it.key());
  EXPECT_EQ(list_keys, (std::vector<std::string>{"bbox", "type", "angle", "index", "blocks", "sub_type"}));

  // Discarded: header, page_number, footer, aside_text (rotated, angle 270), in page order.
  const Json& discarded = page["discarded_blocks"];
  ASSERT_EQ(discarded.size(), 4u);
  EXPECT_EQ(discarded[0]["type"], "header");
  EXPECT_EQ(discarded[1]["type"], "page_number");
  EXPECT_EQ(discarded[2]["type"], "footer");
  EXPECT_EQ(discarded[3]["type"], "aside_text");
  EXPECT_EQ(discarded[3]["angle"], 270);
  EXPECT_EQ(discarded[3]["bbox"].dump(), "[6,158,24,633]");
}

TEST(Assemble, Markdown) {
  Recorder rec;
  const Json middle = BuildMiddle(rec);
  const std::string expected =
      "# 1 Introduction\n\n"
      // text spans joined with " " between spans: double spaces around inline math
      "The energy  $E=mc^2$  relates mass and  $c$ .\n\n"
      "$$\n" +
      std::string(kMergedEq) +
      "\n$$\n\n"
      "$$\nE< mc^{2} \\tag{3}\n$$\n\n"
      "Table 1: Results  \n\n" +
      kTableHtml +
      "\n\n"
      "![](images/image-318.jpg)  \nFigure 1: Setup\n\n"
      "```python\ndef f(x):\n    return x\n```\n\n"
      "- first item  \n- second  $x_1$  item\n\n"
      "Second page text.";
  EXPECT_EQ(MarkdownFromMiddle(middle), expected);
  // NLP mode drops images and tables.
  MarkdownOptions nlp;
  nlp.mode = MarkdownMode::kNlp;
  const std::string nlp_md = MarkdownFromMiddle(middle, nlp);
  EXPECT_EQ(nlp_md.find("<table>"), std::string::npos);
  EXPECT_EQ(nlp_md.find("![]("), std::string::npos);
}

TEST(Assemble, ContentList) {
  Recorder rec;
  const Json middle = BuildMiddle(rec);
  const Json cl = ContentListFromMiddle(middle);
  // 8 para blocks + 4 discarded on page 0, 1 block on page 1.
  ASSERT_EQ(cl.size(), 13u);
  EXPECT_EQ(cl[0].dump(),
            R"({"type":"text","text":"1 Introduction","text_level":1,"bbox":[99,69,898,99],"page_idx":0})");
  EXPECT_EQ(cl[1]["text"], "The energy  $E=mc^2$  relates mass and  $c$ .");
  // Equation text keeps the newlines around $$ (not stripped in content_list).
  EXPECT_EQ(cl[2]["type"], "equation");
  EXPECT_EQ(cl[2]["text"], std::string("\n$$\n") + kMergedEq + "\n$$\n");
  EXPECT_EQ(cl[2]["text_format"], "latex");
  EXPECT_EQ(cl[2]["bbox"].dump(), "[99,309,898,419]");
  EXPECT_EQ(
      cl[4].dump(),
      std::string(
          R"({"type":"table","img_path":"images/table-61.jpg","table_caption":["Table 1: Results"],"table_footnote":[],"table_body":")") +
          kTableHtml + R"(","bbox":[99,500,898,599],"page_idx":0})");
  EXPECT_EQ(
      cl[5].dump(),
      R"({"type":"image","img_path":"images/image-318.jpg","image_caption":["Figure 1: Setup"],"image_footnote":[],"bbox":[519,109,939,289],"page_idx":0})");
  EXPECT_EQ(
      cl[6].dump(),
      R"({"type":"code","sub_type":"code","code_caption":[],"code_body":"def f(x):\n    return x","guess_lang":"python","bbox":[99,609,898,699],"page_idx":0})");
  EXPECT_EQ(
      cl[7].dump(),
      R"({"type":"list","sub_type":"text","list_items":["- first item","- second  $x_1$  item"],"bbox":[99,709,898,799],"page_idx":0})");
  EXPECT_EQ(cl[8].dump(), R"({"type":"header","text":"Running head","bbox":[58,29,939,49],"page_idx":0})");
  EXPECT_EQ(cl[9]["type"], "page_number");
  EXPECT_EQ(cl[10]["type"], "footer");
  EXPECT_EQ(cl[11]["type"], "aside_text");
  EXPECT_EQ(cl[12]["page_idx"], 1);
  EXPECT_EQ(cl[12]["text"], "Second page text.");
}

TEST(Assemble, CaptionsAttachByDistanceAndLeftoversBecomeText) {
  // Two tables stacked with one caption between them: the caption is 4 pt above the lower table and
  // 20 pt below the upper one, so it goes with the lower table. A table footnote far below the lower
  // table still attaches to its nearest table in the second pass. An image caption with no image is
  // left out of every group and becomes a text block.
  const auto layout = ParseLayoutOutput(
      LayoutLineNl("100 100 900 300", "table") + LayoutLineNl("100 325 900 340", "table_caption") +
      LayoutLineNl("100 345 900 600", "table") + LayoutLineNl("100 700 900 720", "table_footnote") +
      LayoutLineNl("100 800 900 820", "image_caption"));
  std::vector<std::optional<std::string>> rec = {std::string("<fcel>u<nl>"), std::string("Table 2"),
                                                 std::string("<fcel>v<nl>"), std::string("note"),
                                                 std::string("orphan caption")};
  PageInput page;
  page.blocks = PostProcessPage(layout, rec);
  page.width_pt = 1000;
  page.height_pt = 1000;
  const Json info = PageInfoJson(page);
  const Json& para = info["para_blocks"];
  ASSERT_EQ(para.size(), 3u);
  EXPECT_EQ(para[0]["type"], "table");
  EXPECT_EQ(para[0]["blocks"].size(), 1u);  // upper table alone
  EXPECT_EQ(para[1]["type"], "table");
  ASSERT_EQ(para[1]["blocks"].size(), 3u);  // body, caption, footnote
  EXPECT_EQ(para[1]["blocks"][1]["type"], "table_caption");
  EXPECT_EQ(para[1]["blocks"][2]["type"], "table_footnote");
  EXPECT_EQ(para[2]["type"], "text");  // orphan image_caption relabelled in place
  EXPECT_EQ(para[2]["index"], 4);
  // Markdown: caption, table, then "\n" + footnote + "  " (stripped at the end).
  const Json middle = Json{{"pdf_info", Json::array({info})}};
  EXPECT_EQ(MarkdownFromMiddle(middle),
            "<table><tr><td>u</td></tr></table>\n\n"
            "Table 2  \n\n<table><tr><td>v</td></tr></table>\n\nnote\n\norphan caption");
}

TEST(Assemble, CodeWithInlineMathAndAlgorithm) {
  const auto layout = ParseLayoutOutput(LayoutLineNl("100 100 900 300", "algorithm") +
                                        LayoutLineNl("100 400 900 600", "code") +
                                        LayoutLineNl("100 610 900 630", "code_caption"));
  std::vector<std::optional<std::string>> rec = {std::string("Input: \\(n\\)\nfor i in 1..n"),
                                                 std::string("```\nint main() { return 0; }\n```"),
                                                 std::string("Listing 1")};
  PageInput page;
  page.blocks = PostProcessPage(layout, rec);
  page.width_pt = 1000;
  page.height_pt = 1000;
  AssembleOptions opt;
  opt.guess_code_language = [](std::string_view code) { return std::string(code.size() > 5 ? "c" : "txt"); };
  const Json info = PageInfoJson(page, opt);
  const Json& para = info["para_blocks"];
  ASSERT_EQ(para.size(), 2u);
  // Algorithm: sub_type algorithm, no guess_lang key, inline math split inside the code body (2.5.4
  // does not relabel code with \( as algorithm; that came in 2.6).
  EXPECT_EQ(para[0]["sub_type"], "algorithm");
  EXPECT_FALSE(para[0].contains("guess_lang"));
  EXPECT_EQ(para[0]["blocks"][0]["lines"][0]["spans"].size(), 3u);
  EXPECT_EQ(para[1]["guess_lang"], "c");
  EXPECT_EQ(para[1]["blocks"][1]["type"], "code_caption");
  const Json middle = Json{{"pdf_info", Json::array({info})}};
  EXPECT_EQ(MarkdownFromMiddle(middle),
            // spans "Input: ", "n", "\nfor i in 1..n": one " " after each non-last span
            "Input:  $n$ \nfor i in 1..n\n\n"
            "Listing 1  \n```c\nint main() { return 0; }\n```");
}

TEST(Assemble, TextCleaningAndInlineSplitRules) {
  // clean_content: balanced "\[ \]" in text become "[ ]" before the inline split; unbalanced "\("
  // leaves the text in one span; a formula across a newline is not matched by `.+?`.
  const auto layout =
      ParseLayoutOutput(LayoutLineNl("100 100 900 200", "text") + LayoutLineNl("100 300 900 400", "text") +
                        LayoutLineNl("100 500 900 600", "title") + LayoutLineNl("100 700 900 800", "text"));
  std::vector<std::optional<std::string>> rec = {
      std::string("see \\[a+b\\] and \\(x\\)"), std::string("open \\(x only"),
      std::string("2 Method \\(\\alpha\\)"), std::string("\\(a\nb\\) \\(c\\)")};
  PageInput page;
  page.blocks = PostProcessPage(layout, rec);
  page.width_pt = 1000;
  page.height_pt = 1000;
  const Json info = PageInfoJson(page);
  const Json& para = info["para_blocks"];
  ASSERT_EQ(para.size(), 4u);
  const Json& s0 = para[0]["lines"][0]["spans"];
  ASSERT_EQ(s0.size(), 2u);
  EXPECT_EQ(s0[0]["content"], "see [a+b] and ");
  EXPECT_EQ(s0[1]["content"], "x");
  const Json& s1 = para[1]["lines"][0]["spans"];
  ASSERT_EQ(s1.size(), 1u);
  EXPECT_EQ(s1[0]["content"], "open \\(x only");
  // Counts balance (2 and 2), but `.` does not cross "\n": the first "\(" finds no "\)" on its line,
  // so only "\(c\)" becomes an inline equation and everything before it stays one text span.
  const Json& s3 = para[3]["lines"][0]["spans"];
  ASSERT_EQ(s3.size(), 2u);
  EXPECT_EQ(s3[0]["content"], "\\(a\nb\\) ");
  EXPECT_EQ(s3[1]["type"], "inline_equation");
  EXPECT_EQ(s3[1]["content"], "c");
  const Json middle = Json{{"pdf_info", Json::array({info})}};
  EXPECT_EQ(MarkdownFromMiddle(middle),
            "see [a+b] and  $x$\n\nopen \\(x only\n\n# 2 Method  $\\alpha$\n\n\\(a\nb\\)  $c$");
}

}  // namespace
}  // namespace mineru::pipeline
