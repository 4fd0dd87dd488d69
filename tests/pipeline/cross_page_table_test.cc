// 1.2.1's cross-page table detection against goldens recorded from mineru-vl-utils 1.2.1 (with the
// MinerU 3.4.4 table helpers and BeautifulSoup it runs on) by tests/tools/record_cross_page_121.py
// (tests/fixtures/cross_page_121.json): the tasks it builds (pair, prompt, segments, columns), and
// the cell_merge its answer turns into on each block. Plus the pieces on their own: the answer
// parser, Python's repr and span attributes.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../util/json_file.h"
#include "pipeline/common/py_text.h"
#include "pipeline/doc/json.h"
#include "pipeline/extract/vlu_1_2/cross_page_table.h"

namespace mineru::pipeline {
namespace {

using Json = nlohmann::json;
using ::mineru::testing::FixtureJson;

std::vector<std::vector<ContentBlock>> Pages(const Json& pages) {
  std::vector<std::vector<ContentBlock>> out;
  for (const Json& page : pages) {
    std::vector<ContentBlock> blocks;
    for (const Json& b : page) {
      ContentBlock cb;
      cb.type = b["type"];
      for (int k = 0; k < 4; ++k) cb.bbox[k] = b["bbox"][k];
      cb.content = b["content"].get<std::string>();
      blocks.push_back(std::move(cb));
    }
    out.push_back(std::move(blocks));
  }
  return out;
}

TEST(CrossPageTable, TasksAndCellMergeMatchTheReference) {
  const Json& cases = FixtureJson("cross_page_121.json")["cases"];
  ASSERT_GE(cases.size(), 20u);
  for (const Json& c : cases) {
    SCOPED_TRACE(c["name"].get<std::string>());
    std::vector<std::vector<ContentBlock>> pages = Pages(c["pages"]);
    const std::vector<CrossPageTask> tasks = CrossPageTableTasks(pages);
    ASSERT_EQ(tasks.size(), c["tasks"].size());
    for (size_t i = 0; i < tasks.size(); ++i) {
      const Json& want = c["tasks"][i];
      EXPECT_EQ(tasks[i].prompt, want["prompt"].get<std::string>());
      EXPECT_EQ(tasks[i].prev_page, want["prev_page"].get<int>());
      EXPECT_EQ(tasks[i].prev_block, want["prev_block"].get<int>());
      EXPECT_EQ(tasks[i].curr_page, want["curr_page"].get<int>());
      EXPECT_EQ(tasks[i].curr_block, want["curr_block"].get<int>());
      EXPECT_EQ(tasks[i].segments, want["segments"].get<size_t>());
      EXPECT_EQ(tasks[i].expanded_cols, want["expanded_cols"].get<int>());
      Json ranges = Json::array();
      for (const auto& [s, e] : tasks[i].ranges) ranges.push_back({s, e});
      EXPECT_EQ(ranges, want["ranges"]);
      const auto cm = CellMergeFromAnswer(tasks[i], c["answer"].get<std::string>());
      if (cm) pages[tasks[i].curr_page][tasks[i].curr_block].cell_merge = cm;
    }
    for (size_t p = 0; p < pages.size(); ++p) {
      for (size_t b = 0; b < pages[p].size(); ++b) {
        const Json& want = c["cell_merge"][p][b];
        const Json got = pages[p][b].cell_merge ? Json(*pages[p][b].cell_merge) : Json(nullptr);
        EXPECT_EQ(got, want) << "page " << p << " block " << b;
      }
    }
  }
}

TEST(CrossPageTable, AnswerParserFollowsTheRegexAndJson) {
  EXPECT_EQ(ParseCellMergeAnswer("[1, 0]"), (std::vector<int>{1, 0}));
  EXPECT_EQ(ParseCellMergeAnswer("```json\n[1,0]\n```"), (std::vector<int>{1, 0}));
  EXPECT_EQ(ParseCellMergeAnswer("[[1, 0]]"), (std::vector<int>{1, 0}));
  EXPECT_EQ(ParseCellMergeAnswer("x [1] y [0, 0]"), (std::vector<int>{1}));  // the first match only
  EXPECT_EQ(ParseCellMergeAnswer("[a] [ 1 ,\t0 ]"), (std::vector<int>{1, 0}));
  for (const char* bad :
       {"[1.0, 0]", "[0,1,]", "[01]", "[2]", "[1 0]", "[ ]", "[]", "", "1, 0", "[1, 0", "[0,1,] [1]", "[10]",
        "[1,\xC2\xA0"
        "0]"}) {
    EXPECT_FALSE(ParseCellMergeAnswer(bad).has_value()) << bad;
  }
}

TEST(CrossPageTable, SamplingIsTheClientsCrossPageParams) {
  const MinerUSampling s = CrossPageSampling();
  EXPECT_EQ(s.temperature, 0.0f);
  EXPECT_EQ(s.top_k, 1);
  EXPECT_FLOAT_EQ(s.top_p, 0.01f);
  EXPECT_FLOAT_EQ(s.presence_penalty, 1.0f);
  EXPECT_FLOAT_EQ(s.frequency_penalty, 0.05f);
  EXPECT_FLOAT_EQ(s.repetition_penalty, 1.0f);
  EXPECT_EQ(s.no_repeat_ngram_size, 100);
  EXPECT_EQ(s.max_new_tokens, 0);
}

TEST(PyRepr, QuotesAndEscapesAsPython) {
  EXPECT_EQ(py::Repr("abc"), "'abc'");
  EXPECT_EQ(py::Repr("it's"), "\"it's\"");
  EXPECT_EQ(py::Repr("it's \"x\""), "'it\\'s \"x\"'");
  EXPECT_EQ(py::Repr("a\\b\n\r\t"), "'a\\\\b\\n\\r\\t'");
  EXPECT_EQ(py::Repr("\x01\x7f"), "'\\x01\\x7f'");
  EXPECT_EQ(py::Repr("\xC2\xA0\xE3\x80\x80\xE2\x80\x8B"), "'\\xa0\\u3000\\u200b'");
  EXPECT_EQ(py::Repr("\xEE\x80\x80"), "'\\ue000'");          // private use
  EXPECT_EQ(py::Repr("\xF3\xB0\x80\x80"), "'\\U000f0000'");  // plane-15 private use
  EXPECT_EQ(py::Repr("中é😀"), "'中é😀'");
  EXPECT_EQ(py::ReprList({"a", "it's"}), "['a', \"it's\"]");
  EXPECT_EQ(py::ReprList({}), "[]");
}

TEST(CrossPageTable, SpanAttributesReadAsPythonInt) {
  EXPECT_EQ(PyIntAttribute(" 2 "), 2);
  EXPECT_EQ(PyIntAttribute("1_0"), 10);
  EXPECT_EQ(PyIntAttribute("-1"), -1);
  EXPECT_FALSE(PyIntAttribute("").has_value());
  EXPECT_FALSE(PyIntAttribute("2px").has_value());
  EXPECT_FALSE(PyIntAttribute("1__0").has_value());
  EXPECT_FALSE(PyIntAttribute("99999999").has_value());
}

TEST(CrossPageTable, HostileTablesEndQuickly) {
  // Spans past the limit, unparsable spans and deep nesting: no task, no crash, no blow-up.
  for (const std::string& html : {std::string("<table><tr><td colspan=\"100000\">a</td></tr></table>"),
                                  std::string("<table><tr><td rowspan=\"x\">a</td></tr></table>"),
                                  std::string(20000, '<') + "table><tr><td>a</td></tr></table>",
                                  "<table>" + std::string(5000, ' ') +
                                      [] {
                                        std::string s;
                                        for (int i = 0; i < 2000; ++i) s += "<div>";
                                        return s;
                                      }() +
                                      "<tr><td>a</td></tr></table>"}) {
    std::vector<std::vector<ContentBlock>> pages(2);
    ContentBlock t;
    t.type = "table";
    t.bbox[2] = t.bbox[3] = 1;
    t.content = html;
    pages[0].push_back(t);
    t.content = "<table><tr><td>b</td></tr></table>";
    pages[1].push_back(t);
    const auto tasks = CrossPageTableTasks(pages);
    EXPECT_LE(tasks.size(), 1u);
  }
}

}  // namespace
}  // namespace mineru::pipeline
