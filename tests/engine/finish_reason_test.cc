// Why a request ended, typed (issue 36): each reason has one spelling, used by the CLI, the logs
// and (through server::OpenAiFinishReason) the OpenAI API.
#include <gtest/gtest.h>

#include <string>

#include "engine/finish_reason.h"

namespace mineru {
namespace {

TEST(FinishReasonTest, EachReasonHasItsName) {
  EXPECT_STREQ(FinishReasonName(FinishReason::kStop), "stop");
  EXPECT_STREQ(FinishReasonName(FinishReason::kLength), "length");
  EXPECT_STREQ(FinishReasonName(FinishReason::kCancelled), "cancelled");
  EXPECT_STREQ(FinishReasonName(FinishReason::kError), "error");
  EXPECT_STREQ(FinishReasonName(FinishReason::kNone), "");  // not finished
}

TEST(FinishReasonTest, NamesAreCompileTimeConstants) {
  static_assert(FinishReasonName(FinishReason::kStop)[0] == 's');
  constexpr const char* kLength = FinishReasonName(FinishReason::kLength);
  EXPECT_EQ(std::string(kLength), "length");
}

}  // namespace
}  // namespace mineru
