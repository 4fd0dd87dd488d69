// Tests of base/json_parse.h: nesting and memory bounded while parsing, numbers read in their
// JSON type before narrowing.
#include "base/json_parse.h"

#include <gtest/gtest.h>

#include <string>

namespace mineru {
namespace {

using Json = nlohmann::json;

std::string Nested(size_t depth, char open, char close, const std::string& inner = "") {
  std::string s;
  for (size_t i = 0; i < depth; ++i) s += open == '{' ? std::string("{\"a\":") : std::string(1, open);
  s += inner.empty() ? "1" : inner;
  s += std::string(depth, close);
  return s;
}

TEST(JsonParse, ParsesOrdinaryValuesLikeNlohmann) {
  const std::string text =
      R"({"a":[1,-2,3.5,"x",null,true,{"b":"a string longer than fifteen bytes"}],"a":{"dup":18446744073709551615}})";
  Json j;
  ASSERT_TRUE(ParseJson(text, {}, &j).ok());
  EXPECT_EQ(j, Json::parse(text));  // the last duplicate key wins, as in nlohmann
}

TEST(JsonParse, DeepNestingIsRefusedWithoutRecursion) {
  Json j = Json::array();
  // 150,000 deep: what crashed the server (SIGSEGV) when the value was walked afterwards.
  for (const auto& [open, close] : {std::pair{'[', ']'}, std::pair{'{', '}'}}) {
    const Status s = ParseJson(Nested(150000, open, close), {}, &j);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find("nested deeper than 64"), std::string::npos) << s.message();
    EXPECT_TRUE(j.is_null());
  }
}

TEST(JsonParse, DepthLimitIsExact) {
  JsonLimits lim;
  lim.max_depth = 5;
  Json j;
  EXPECT_TRUE(ParseJson(Nested(5, '[', ']'), lim, &j).ok());
  EXPECT_FALSE(ParseJson(Nested(6, '[', ']'), lim, &j).ok());
  EXPECT_TRUE(ParseJson(Nested(5, '{', '}'), lim, &j).ok());
  EXPECT_FALSE(ParseJson(Nested(6, '{', '}'), lim, &j).ok());
  EXPECT_TRUE(ParseJson("7", lim, &j).ok());
}

TEST(JsonParse, ManySmallValuesAreRefusedByTheirCost) {
  // [{},{},...]: ~3 bytes of text, ~100 bytes of heap each (35x the body when it was unbounded).
  std::string text = "[";
  for (int i = 0; i < 200000; ++i) text += i ? ",{}" : "{}";
  text += "]";
  Json j;
  const Status s = ParseJson(text, RequestJsonLimits(text.size()), &j);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
  EXPECT_TRUE(j.is_null());
  // Short strings cost a heap object each (nlohmann keeps strings behind a pointer).
  std::string strings = "[";
  for (int i = 0; i < 200000; ++i) strings += i ? ",\"a\"" : "\"a\"";
  strings += "]";
  EXPECT_EQ(ParseJson(strings, RequestJsonLimits(strings.size()), &j).code(), StatusCode::kResourceExhausted);
  // The same value passes without a budget, and a request made of one long string passes with one.
  EXPECT_TRUE(ParseJson(text, {}, &j).ok());
  const std::string str = "{\"s\":\"" + std::string(3 << 20, 'x') + "\"}";
  EXPECT_TRUE(ParseJson(str, RequestJsonLimits(str.size()), &j).ok());
}

TEST(JsonParse, TokenIdArraysOfARealPromptFit) {
  std::string text = "{\"prompt\":[";
  for (int i = 0; i < 16384; ++i) text += (i ? "," : "") + std::to_string(151000 + i % 600);
  text += "]}";
  Json j;
  EXPECT_TRUE(ParseJson(text, RequestJsonLimits(text.size()), &j).ok());
}

TEST(JsonParse, MalformedTextSaysWhere) {
  Json j;
  const Status s = ParseJson("{\"a\": [1, 2,, 3]}", {}, &j);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("at byte"), std::string::npos) << s.message();
  EXPECT_FALSE(ParseJson("", {}, &j).ok());
  EXPECT_FALSE(ParseJson("1 2", {}, &j).ok());
  EXPECT_FALSE(ParseJson("1e400", {}, &j).ok());
}

TEST(JsonNumbers, IntegersAreCheckedBeforeNarrowing) {
  EXPECT_FALSE(JsonIntegerIn(Json::parse("18446744073709551615"), -(1 << 30), 1 << 30, "priority").ok());
  EXPECT_FALSE(JsonIntegerIn(Json::parse("18446744072635809792"), -(1 << 30), 1 << 30, "priority").ok());
  EXPECT_FALSE(JsonIntegerIn(Json::parse("4294967297"), 1, 1, "n").ok());
  EXPECT_FALSE(JsonIntegerIn(Json::parse("1.0"), 1, 1, "n").ok());
  EXPECT_FALSE(JsonIntegerIn(Json::parse("\"1\""), 1, 1, "n").ok());
  EXPECT_FALSE(JsonIntegerIn(Json::parse("-9223372036854775808"), 0, 10, "x").ok());
  EXPECT_EQ(*JsonIntegerIn(Json::parse("1"), 1, 1, "n"), 1);
  EXPECT_EQ(*JsonIntegerIn(Json::parse("-5"), -10, 10, "x"), -5);
  EXPECT_EQ(*JsonIntegerIn(Json::parse("9223372036854775807"), 0, INT64_MAX, "x"), INT64_MAX);
  const Status s = JsonIntegerIn(Json::parse("7"), 0, 5, "top_k").status();
  EXPECT_NE(s.message().find("'top_k' must be an integer in [0, 5]"), std::string::npos) << s.message();
}

TEST(JsonNumbers, RealsAreCheckedInRange) {
  EXPECT_DOUBLE_EQ(*JsonNumberIn(Json::parse("0.5"), 0, 1, "top_p"), 0.5);
  EXPECT_DOUBLE_EQ(*JsonNumberIn(Json::parse("1"), 0, 1, "top_p"), 1.0);
  EXPECT_FALSE(JsonNumberIn(Json::parse("1.5"), 0, 1, "top_p").ok());
  EXPECT_FALSE(JsonNumberIn(Json::parse("null"), 0, 1, "top_p").ok());
  EXPECT_FALSE(JsonNumberIn(Json::parse("18446744073709551615"), 0, 1e9, "x").ok());
}

}  // namespace
}  // namespace mineru
