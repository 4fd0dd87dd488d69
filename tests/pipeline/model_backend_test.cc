// The model backend's text-only requests (1.2.1's cross-page table questions) reach the engine as the
// client sends them: the default system prompt, the text, no image, the given sampling, special
// tokens kept. Checked against the same request submitted to the engine directly.
#include <gtest/gtest.h>

#include "../model/golden_util.h"
#include "engine/chat.h"
#include "engine/engine.h"
#include "pipeline/extract/vlu_1_2/cross_page_table.h"
#include "pipeline/model_backend.h"

namespace mineru::pipeline {
namespace {

TEST(ModelBackend, TextRequestsAreTheClientsTextOnlyChat) {
  auto model = Qwen2VLModel::Load(testing::FixturePath("tinyvocab")).value();
  auto tok = Tokenizer::LoadFromFile(testing::FixturePath("tinyvocab/tokenizer.json")).value();
  EngineConfig cfg;
  cfg.threads = 2;
  auto engine = Engine::Create(*model, tok.get(), cfg).value();
  ModelBackendOptions opt;
  opt.max_block_tokens = 24;
  auto backend = MakeModelBackend(engine.get(), opt);
  const std::vector<std::string> prompts = {"Please merge the next two tables.", "[['a', 'b']]"};
  std::vector<Backend::TextRequest> requests;
  for (const auto& p : prompts) requests.push_back({0, p, CrossPageSampling()});
  const auto answers = backend->AskText(requests);
  ASSERT_EQ(answers.size(), prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_TRUE(answers[i].ok()) << answers[i].status().ToString();
    EngineRequest r;
    r.messages = SingleTurn(prompts[i], 0);
    r.sampling = ToEngineSampling(CrossPageSampling());
    r.max_new_tokens = 24;
    r.skip_special_tokens = false;
    const Completion direct = engine->Submit(std::move(r)).value()->Wait();
    EXPECT_EQ(*answers[i], direct.text) << prompts[i];
    EXPECT_FALSE(direct.text.empty());
  }
}

}  // namespace
}  // namespace mineru::pipeline
