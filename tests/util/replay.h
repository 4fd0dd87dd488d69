// tests/util/replay.h — what the model answers in tests that run without one: lines of a layout
// answer, and --replay files (per page, the layout answer and each block's recognised content).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"

namespace mineru::testing {

// One line of a layout answer: a box ("x1 y1 x2 y2", 0-1000), its type and what follows (the
// rotation), without a newline.
inline std::string LayoutLine(const std::string& coords, const std::string& type,
                              const std::string& tail = "<|rotate_up|>") {
  return "<|box_start|>" + coords + "<|box_end|><|ref_start|>" + type + "<|ref_end|>" + tail;
}

// Writes <dir>/replay.json with `pages` pages of one layout and returns its path.
template <typename Blocks>
std::string WriteReplayPages(const std::string& dir, int pages, const std::string& layout,
                             Blocks blocks_of_page) {
  nlohmann::json j = nlohmann::json::array();
  for (int i = 1; i <= pages; ++i) j.push_back({{"layout", layout}, {"blocks", blocks_of_page(i)}});
  const std::string p = dir + "/replay.json";
  EXPECT_TRUE(WriteStringToFile(p, j.dump()).ok()) << p;
  return p;
}

// Pages of three blocks: a title "Page Title <n>", text with an inline formula, and a one-row table.
inline std::string WriteReplay(const std::string& dir, int pages) {
  const std::string layout = LayoutLine("100 050 900 090", "title") + "\n" +
                             LayoutLine("100 100 900 300", "text") + "\n" +
                             LayoutLine("100 400 900 600", "table");
  return WriteReplayPages(dir, pages, layout, [](int n) {
    return nlohmann::json::array(
        {"Page Title " + std::to_string(n), "Some \\(x^2\\) text.", "<fcel>A<fcel>B<nl>"});
  });
}

// Smaller pages of two blocks: a title "Title <n>" and plain text.
inline std::string WriteTitleTextReplay(const std::string& dir, int pages) {
  const std::string layout =
      LayoutLine("100 050 900 090", "title") + "\n" + LayoutLine("100 100 900 300", "text");
  return WriteReplayPages(dir, pages, layout, [](int n) {
    return nlohmann::json::array({"Title " + std::to_string(n), "Some text."});
  });
}

}  // namespace mineru::testing
