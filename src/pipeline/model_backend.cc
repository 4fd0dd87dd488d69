// pipeline/model_backend.cc — layout and recognition requests through the engine, with MinerU's
// prompts and sampling, decoded with special tokens kept and the end token removed.

#include "pipeline/model_backend.h"

#include <atomic>

#include "engine/chat.h"
#include "engine/generate.h"

namespace mineru::pipeline {
namespace {

class ModelBackend : public Backend {
 public:
  ModelBackend(const Qwen2VLModel& m, const Tokenizer& t, ThreadPool* pool, const ModelBackendOptions& o)
      : model_(m), tok_(t), pool_(pool), opt_(o) {}

  StatusOr<std::string> Layout(const RgbImage& image) override {
    SamplingParams s = SamplingForTask(Task::kLayout);
    return Run(image, std::string(PromptForTask(Task::kLayout)), s, opt_.max_layout_tokens);
  }

  std::vector<StatusOr<std::string>> Recognize(const std::vector<RecognitionTask>& tasks) override {
    std::vector<StatusOr<std::string>> out;
    for (const RecognitionTask& t : tasks) {
      if (!t.image) {
        out.push_back(InvalidArgumentError("missing crop"));
        continue;
      }
      out.push_back(Run(*t.image, t.prompt, t.sampling, opt_.max_block_tokens));
    }
    return out;
  }

  BackendStats stats() const override { return {prompt_tokens_.load(), generated_tokens_.load()}; }

 private:
  StatusOr<std::string> Run(const RgbImage& image, const std::string& prompt, const SamplingParams& s,
                            int default_cap) {
    MINERU_ASSIGN_OR_RETURN(PreparedPrompt p, PreparePrompt(model_, tok_, SingleTurn(prompt, 1), {&image}));
    GenerateOptions g;
    g.sampling = ToEngineSampling(s);
    g.max_new_tokens = s.max_new_tokens > 0 ? s.max_new_tokens : default_cap;
    // Stop at <|im_end|> or <|endoftext|> (and the config's eos ids).
    g.stop_ids = model_.config().eos_token_ids;
    for (const char* tok : {"<|im_end|>", "<|endoftext|>"}) {
      if (auto id = tok_.TokenToId(tok)) g.stop_ids.push_back(*id);
    }
    MINERU_ASSIGN_OR_RETURN(GenerateResult r, Generate(model_, p.ids, p.images, g, pool_));
    prompt_tokens_ += r.prompt_tokens;
    generated_tokens_ += static_cast<int64_t>(r.ids.size());
    // As the transformers client: drop the end/pad tokens, keep every other special token.
    std::vector<int32_t> ids;
    for (int32_t id : r.ids) {
      bool stop = false;
      for (int32_t s2 : g.stop_ids) stop = stop || id == s2;
      if (!stop) ids.push_back(id);
    }
    return tok_.Decode(ids, /*skip_special_tokens=*/false);
  }

  const Qwen2VLModel& model_;
  const Tokenizer& tok_;
  ThreadPool* pool_;
  ModelBackendOptions opt_;
  std::atomic<int64_t> prompt_tokens_{0}, generated_tokens_{0};
};

}  // namespace

mineru::SamplingParams ToEngineSampling(const SamplingParams& p) {
  mineru::SamplingParams e;
  e.temperature = p.temperature;
  e.top_p = p.top_p;
  e.top_k = p.top_k;
  e.presence_penalty = p.presence_penalty;
  e.frequency_penalty = p.frequency_penalty;
  e.repetition_penalty = p.repetition_penalty;
  e.no_repeat_ngram_size = p.no_repeat_ngram_size;
  return e;
}

std::unique_ptr<Backend> MakeModelBackend(const Qwen2VLModel& model, const Tokenizer& tokenizer, ThreadPool* pool,
                                          const ModelBackendOptions& options) {
  return std::make_unique<ModelBackend>(model, tokenizer, pool, options);
}

}  // namespace mineru::pipeline
