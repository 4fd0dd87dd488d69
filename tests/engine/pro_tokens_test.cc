// The added tokens of a MinerU2.5-Pro tokenizer (<|txt_contd_tgt|>, <|class_start|>, …) survive
// when a request keeps special tokens: in the chat template (their text encodes to their ids),
// through generation (the tinyvocab model, pushed onto them with logit_bias since its random
// weights never pick them) and in the streamed text. Fixture: tests/fixtures/tinyvocab_pro, made
// by tests/fixtures/make_tinyvocab_pro.py.

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "../model/golden_util.h"
#include "base/mapped_file.h"
#include "engine/chat.h"
#include "engine/engine.h"

namespace mineru {
namespace {

using testing::FixturePath;

struct ProToken {
  int32_t id;
  std::string content;
  bool special;
};

std::vector<ProToken> ProTokens() {
  const auto j =
      nlohmann::json::parse(ReadFileToString(FixturePath("tinyvocab_pro/pro_tokens.json")).value());
  std::vector<ProToken> out;
  for (const auto& t : j)
    out.push_back({t["id"].get<int32_t>(), t["content"].get<std::string>(), t["special"].get<bool>()});
  return out;
}

class ProTokensTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tok_ = Tokenizer::LoadFromFile(FixturePath("tinyvocab_pro/tokenizer.json")).value();
    tokens_ = ProTokens();
    ASSERT_EQ(tokens_.size(), 16u);
  }
  std::unique_ptr<Tokenizer> tok_;
  std::vector<ProToken> tokens_;
};

TEST_F(ProTokensTest, TheTokenizerKnowsThemAndTheTemplateEncodesThemToTheirIds) {
  for (const auto& t : tokens_) {
    EXPECT_EQ(tok_->TokenToId(t.content), t.id) << t.content;
    EXPECT_EQ(tok_->IsSpecial(t.id), t.special) << t.content;
  }
  // A prompt that contains them (as an assistant turn of a multi-turn chat would).
  std::string text = "Image Analysis:";
  for (const auto& t : tokens_) text += t.content + "x";
  const std::string prompt = RenderChatTemplate(SingleTurn(text, 0), true);
  const std::vector<int32_t> ids = tok_->Encode(prompt).value();
  std::vector<int32_t> found;
  for (int32_t id : ids) {
    if (id >= tokens_.front().id && id <= tokens_.back().id) found.push_back(id);
  }
  std::vector<int32_t> want;
  for (const auto& t : tokens_) want.push_back(t.id);
  EXPECT_EQ(found, want);  // each one exactly once, as a single id, in order
  EXPECT_EQ(tok_->Decode(ids, false).value(), prompt);
}

TEST_F(ProTokensTest, GenerationAndStreamingKeepThemVerbatim) {
  auto model = Qwen2VLModel::Load(FixturePath("tinyvocab_pro")).value();
  EngineConfig cfg;
  cfg.threads = 2;
  auto engine = Engine::Create(*model, tok_.get(), cfg).value();
  std::map<int32_t, std::string> content;
  for (const auto& t : tokens_) content[t.id] = t.content;

  EngineRequest r;
  r.messages = SingleTurn("Describe.", 0);
  r.max_new_tokens = 32;
  r.ignore_eos = true;
  r.skip_special_tokens = false;  // what MinerU's client sends
  // Only the Pro tokens are in reach: the greedy choice among them follows the model's logits,
  // so the answer mixes several of them.
  for (const auto& t : tokens_) r.sampling.logit_bias.emplace_back(t.id, 100.0f);
  auto h = engine->Submit(std::move(r)).value();
  std::string streamed;
  std::vector<int32_t> streamed_ids;
  while (h->Next(&streamed, &streamed_ids)) {
  }
  const Completion c = h->Wait();
  ASSERT_EQ(c.ids.size(), 32u);
  std::string want;
  for (int32_t id : c.ids) {
    ASSERT_TRUE(content.count(id)) << "generated " << id << ", not a Pro token";
    want += content[id];
  }
  EXPECT_EQ(c.text, want);
  EXPECT_EQ(streamed, want);
  EXPECT_EQ(streamed_ids, c.ids);
  EXPECT_EQ(tok_->Decode(c.ids, false).value(), want);

  // Each token alone, forced: every one of them comes out verbatim, special or not.
  for (const auto& t : tokens_) {
    EngineRequest one;
    one.messages = SingleTurn("Describe.", 0);
    one.max_new_tokens = 2;
    one.ignore_eos = true;
    one.skip_special_tokens = false;
    one.sampling.logit_bias = {{t.id, 100.0f}};
    auto h1 = engine->Submit(std::move(one)).value();
    std::string s;
    while (h1->Next(&s, nullptr)) {
    }
    EXPECT_EQ(s, t.content + t.content);
    EXPECT_EQ(h1->Wait().text, t.content + t.content);
  }
}

}  // namespace
}  // namespace mineru
