// pipeline/model_backend.cc — layout and recognition requests through the engine, with MinerU's
// prompts and sampling, decoded with special tokens kept and the end token removed (as the
// transformers client does).

#include "pipeline/model_backend.h"

#include <atomic>

namespace mineru::pipeline {
namespace {

class ModelBackend : public Backend {
 public:
  ModelBackend(Engine* e, const ModelBackendOptions& o) : engine_(e), opt_(o) {}

  StatusOr<std::string> Layout(int, const RecognitionTask& task) override {
    if (!task.image) return InvalidArgumentError("missing layout image");
    auto h = Submit(*task.image, task.prompt, task.sampling, opt_.max_layout_tokens);
    if (!h.ok()) return h.status();
    return Collect(**h);
  }

  std::vector<StatusOr<std::string>> Recognize(int, const std::vector<RecognitionTask>& tasks) override {
    // Submit every crop first so they batch, then collect in order.
    std::vector<StatusOr<std::shared_ptr<RequestHandle>>> handles;
    for (const RecognitionTask& t : tasks) {
      if (!t.image) {
        handles.push_back(InvalidArgumentError("missing crop"));
        continue;
      }
      handles.push_back(Submit(*t.image, t.prompt, t.sampling, opt_.max_block_tokens));
    }
    std::vector<StatusOr<std::string>> out;
    for (auto& h : handles) {
      if (!h.ok())
        out.push_back(h.status());
      else
        out.push_back(Collect(**h));
    }
    return out;
  }

  std::vector<StatusOr<std::string>> AskText(const std::vector<TextRequest>& requests) override {
    std::vector<StatusOr<std::shared_ptr<RequestHandle>>> handles;
    for (const TextRequest& t : requests) {
      EngineRequest r;
      r.messages = SingleTurn(t.prompt, 0);  // the client's default system prompt, no image
      r.sampling = ToEngineSampling(t.sampling);
      r.max_new_tokens = t.sampling.max_new_tokens > 0 ? t.sampling.max_new_tokens : opt_.max_block_tokens;
      r.skip_special_tokens = false;
      handles.push_back(engine_->Submit(std::move(r)));
    }
    std::vector<StatusOr<std::string>> out;
    for (auto& h : handles) {
      if (!h.ok())
        out.push_back(h.status());
      else
        out.push_back(Collect(**h));
    }
    return out;
  }

  BackendStats stats() const override {
    EngineStats s = engine_->Stats();
    return {s.computed_tokens, s.generated_tokens};
  }

 private:
  StatusOr<std::shared_ptr<RequestHandle>> Submit(const RgbImage& image, const std::string& prompt,
                                                  const MinerUSampling& s, int default_cap) {
    EngineRequest r;
    r.messages = SingleTurn(prompt, 1);
    r.images.push_back(image);
    r.sampling = ToEngineSampling(s);
    r.max_new_tokens = s.max_new_tokens > 0 ? s.max_new_tokens : default_cap;
    r.skip_special_tokens = false;
    return engine_->Submit(std::move(r));
  }

  static StatusOr<std::string> Collect(RequestHandle& h) {
    Completion c = h.Wait();
    if (c.finish_reason == FinishReason::kError || c.finish_reason == FinishReason::kCancelled) {
      return InternalError(c.error.empty() ? std::string("request ") + FinishReasonName(c.finish_reason)
                                           : c.error);
    }
    return c.text;  // stop tokens are never part of the text
  }

  Engine* engine_;
  ModelBackendOptions opt_;
};

}  // namespace

mineru::SamplingParams ToEngineSampling(const MinerUSampling& p) {
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

std::unique_ptr<Backend> MakeModelBackend(Engine* engine, const ModelBackendOptions& options) {
  return std::make_unique<ModelBackend>(engine, options);
}

}  // namespace mineru::pipeline
