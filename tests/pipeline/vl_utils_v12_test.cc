// The 1.2.1 extraction (layout_v12, post_process_v12, FixEquationV12) against goldens recorded from
// mineru-vl-utils 1.2.1 itself by tests/tools/record_vl_utils_121.py (tests/fixtures/vl_utils_121.json):
// per page the parsed layout, the requests (index, prompt, penalties, final crop size) and the
// post-processed blocks as model.json writes them; per function input/output pairs.
#include <functional>
#include <map>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../util/json_file.h"
#include "pipeline/common/formula.h"
#include "pipeline/doc/json.h"
#include "pipeline/extract/vlu_1_2/layout.h"
#include "pipeline/extract/vlu_1_2/post_process.h"

namespace mineru::pipeline {
namespace {

using ::mineru::testing::FixtureJson;

// The Mermaid repetition detector is not reproduced (post_process_v12.h); the recorder checks that
// its flowcharts do not trigger it, so no page is skipped any more.
bool UsesUnportedRepair(const std::string&) { return false; }

nlohmann::json ParsedJson(const std::vector<LayoutBlock>& blocks) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& b : blocks) {
    nlohmann::json j = {{"type", b.type},
                        {"bbox", {b.x1, b.y1, b.x2, b.y2}},
                        {"angle", b.angle ? nlohmann::json(*b.angle) : nlohmann::json(nullptr)},
                        {"content", nullptr}};
    if (b.type == "text") j["merge_prev"] = b.merge_prev;
    out.push_back(j);
  }
  return out;
}

TEST(VlUtilsV12, LayoutParsingMatchesReference) {
  int n = 0;
  for (const auto& page : FixtureJson("vl_utils_121.json")["pages"]) {
    const std::string raw = page["layout"];
    std::vector<std::string> warnings;
    const auto blocks = ParseLayoutOutputV12(raw, &warnings);
    ASSERT_EQ(ParsedJson(blocks), page["parsed"]) << "layout: " << raw;
    // Warnings: the same ones in the same order (the reference's text up to the offending line).
    ASSERT_EQ(warnings.size(), page["parse_warnings"].size()) << "layout: " << raw;
    for (size_t k = 0; k < warnings.size(); ++k) {
      const std::string want = page["parse_warnings"][k];
      EXPECT_EQ(warnings[k].substr(0, want.size()), want) << "layout: " << raw;
    }
    ++n;
  }
  EXPECT_GT(n, 100);
}

TEST(VlUtilsV12, RequestsMatchReference) {
  for (const auto& page : FixtureJson("vl_utils_121.json")["pages"]) {
    const std::string raw = page["layout"];
    auto blocks = ParseLayoutOutputV12(raw);
    const ExtractPlan plan = PlanExtractV12(blocks, page["page_size"][0], page["page_size"][1]);
    nlohmann::json got = nlohmann::json::array();
    for (const auto& r : plan.requests) {
      got.push_back({{"index", r.index},
                     {"prompt", r.prompt},
                     {"presence_penalty", r.sampling.presence_penalty},
                     {"frequency_penalty", r.sampling.frequency_penalty},
                     {"size", {r.crop.resize.out_w, r.crop.resize.out_h}}});
    }
    // Penalties are floats on our side: compare them with tolerance, the rest exactly.
    const auto& want = page["requests"];
    ASSERT_EQ(got.size(), want.size()) << "layout: " << raw;
    for (size_t k = 0; k < want.size(); ++k) {
      EXPECT_EQ(got[k]["index"], want[k]["index"]) << raw;
      EXPECT_EQ(got[k]["prompt"], want[k]["prompt"]) << raw;
      EXPECT_EQ(got[k]["size"], want[k]["size"]) << raw << " request " << k;
      EXPECT_NEAR(got[k]["presence_penalty"].get<double>(), want[k]["presence_penalty"].get<double>(), 1e-6);
      EXPECT_NEAR(got[k]["frequency_penalty"].get<double>(), want[k]["frequency_penalty"].get<double>(),
                  1e-6);
    }
  }
}

TEST(VlUtilsV12, PostProcessedPagesMatchReference) {
  int compared = 0;
  for (const auto& page : FixtureJson("vl_utils_121.json")["pages"]) {
    bool skip = false;
    for (const auto& o : page["outputs"]) skip = skip || UsesUnportedRepair(o.get<std::string>());
    if (skip) continue;
    const std::string raw = page["layout"];
    auto blocks = ParseLayoutOutputV12(raw);
    const ExtractPlan plan = PlanExtractV12(blocks, page["page_size"][0], page["page_size"][1]);
    std::vector<std::optional<std::string>> recognised(blocks.size());
    ASSERT_EQ(plan.requests.size(), page["outputs"].size());
    for (size_t k = 0; k < plan.requests.size(); ++k) recognised[plan.requests[k].index] = page["outputs"][k];
    const Json got = ModelJson({PostProcessPageV12(blocks, recognised, plan.absorbed)})[0];
    ASSERT_EQ(nlohmann::json::parse(got.dump()), page["model"]) << "layout: " << raw;
    ++compared;
  }
  EXPECT_GT(compared, 100);
}

// One check per reference function; a golden naming a function without a check fails.
TEST(VlUtilsV12, FunctionsMatchReference) {
  using Check = std::function<void(const std::string&, const nlohmann::json&)>;
  const std::map<std::string, Check> checks = {
      {"display2inline",
       [](const std::string& in, const nlohmann::json& w) { EXPECT_EQ(TextDisplayToInline(in), w) << in; }},
      {"macro_spacing",
       [](const std::string& in, const nlohmann::json& w) { EXPECT_EQ(TextMacroSpacing(in), w) << in; }},
      {"underscores", [](const std::string& in,
                         const nlohmann::json& w) { EXPECT_EQ(TextUnderscoresOutside(in), w) << in; }},
      {"chart_repetition",
       [](const std::string& in, const nlohmann::json& w) { EXPECT_EQ(FixChartRepetition(in), w) << in; }},
      {"table_tokens",
       [](const std::string& in, const nlohmann::json& w) {
         const TableImageTokens map = {{"[AC2K]", "data:image/jpeg;base64,QUJD"},
                                       {"[ZZ78]", "data:image/jpeg;base64,REVG"}};
         EXPECT_EQ(ReplaceTableImageTokens(in, map), w) << in;
       }},
      {"mermaid_repetition",
       [](const std::string& in, const nlohmann::json& w) {
         EXPECT_EQ(MermaidHasRepetition(in), w.get<bool>()) << in;
       }},
      {"mermaid_legalize",
       [](const std::string& in, const nlohmann::json& w) { EXPECT_EQ(MermaidNodeIdLegalize(in), w) << in; }},
      {"mermaid_edges", [](const std::string& in,
                           const nlohmann::json& w) { EXPECT_EQ(MermaidInvalidEdgeLines(in), w) << in; }},
      {"mermaid_subgraphs",
       [](const std::string& in, const nlohmann::json& w) {
         EXPECT_EQ(MermaidInvalidSubgraphLines(in), w) << in;
       }},
      {"mermaid_strict",
       [](const std::string& in, const nlohmann::json& w) { EXPECT_EQ(MermaidStrict(in), w) << in; }},
      {"table_eq",
       [](const std::string& in, const nlohmann::json& w) { EXPECT_EQ(TableFormulaToEq(in), w) << in; }},
      {"malformed_md",
       [](const std::string& in, const nlohmann::json& w) {
         EXPECT_EQ(HasMalformedMarkdownTable(in), w.get<bool>()) << in;
       }},
      {"md_to_html",
       [](const std::string& in, const nlohmann::json& w) {
         const auto html = MarkdownTableToHtml(in);
         EXPECT_EQ(html ? nlohmann::json(*html) : nlohmann::json(nullptr), w) << in;
       }},
      {"image_analysis",
       [](const std::string& in, const nlohmann::json& w) {
         const ImageAnalysis a = ProcessImageAnalysis(in);
         EXPECT_EQ(a.cls, w["class"]) << in;
         EXPECT_EQ(a.sub_class, w["sub_class"]) << in;
         EXPECT_EQ(a.caption, w["caption"]) << in;
         EXPECT_EQ(a.content, w["content"]) << in;
       }},
  };
  int compared = 0;
  for (const auto& c : FixtureJson("vl_utils_121.json")["functions"]) {
    const std::string fn = c["fn"], in = c["input"];
    auto it = checks.find(fn);
    if (it == checks.end()) {
      ADD_FAILURE() << "golden for an unchecked function: " << fn;
      continue;
    }
    it->second(in, c["output"]);
    ++compared;
  }
  EXPECT_GT(compared, 100);
}

TEST(VlUtilsV12, LooseFormatWithoutNewlines) {
  const std::string raw =
      "<|box_start|>10 20 300 40<|box_end|><|ref_start|>doc_title<|ref_end|><|rotate_up|>"
      "<|box_start|>10 50 300 90<|box_end|><|ref_start|>text<|ref_end|><|txt_contd_tgt|>"
      "<|box_start|>5 5 6 6<|box_end|><|ref_start|>inline_formula<|ref_end|><|rotate_up|>"
      "<|box_start|>10 100 300 200<|box_end|><|ref_start|>unknown<|ref_end|><|rotate_left|>";
  std::vector<std::string> warnings;
  const auto blocks = ParseLayoutOutputV12(raw, &warnings);
  ASSERT_EQ(blocks.size(), 3u);
  EXPECT_EQ(blocks[0].type, "doc_title");
  EXPECT_EQ(blocks[1].type, "text");
  EXPECT_TRUE(blocks[1].merge_prev);
  EXPECT_FALSE(blocks[1].angle.has_value());
  EXPECT_EQ(blocks[2].type, "image");
  EXPECT_EQ(blocks[2].angle, 270);
  EXPECT_EQ(warnings.size(), 1u);  // the text block has no rotation token
}

TEST(VlUtilsV12, EquationChainStripsDelimitersAndKeepsBrokenArrays) {
  EXPECT_EQ(FixEquationV12("\\[ a<b \\]"), "a< b");
  // An \end{array} before its \begin: 1.2.1 leaves the left/right step's input unchanged.
  const std::string broken = "\\end{array} \\left( x \\begin{array}{l}";
  EXPECT_EQ(MatchEquationLeftRightV12(broken), broken);
}

}  // namespace
}  // namespace mineru::pipeline
