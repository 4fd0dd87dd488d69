// engine/input_processor.h — the engine's input processor (internal to engine/): turns an
// EngineRequest into a Sequence on the submitting thread — chat template or raw ids, image
// preprocessing and token expansion, limits, M-RoPE positions, prefix-cache content keys,
// sampler and detokenizer. Stateless after construction, so any thread may call Process.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"
#include "engine/engine.h"
#include "engine/sequence.h"

namespace mineru {

struct InputLimits {
  int max_new_tokens = 0;          // per request
  int64_t max_prompt_tokens = 0;   // prompt tokens, images expanded
  int64_t kv_capacity_tokens = 0;  // prompt + max_new_tokens must fit the whole KV cache
};

class InputProcessor {
 public:
  // model and tokenizer (null: raw ids only) are borrowed and must outlive the processor.
  InputProcessor(const Qwen2VLModel& model, const Tokenizer* tokenizer, InputLimits limits,
                 std::vector<int32_t> stop_ids);

  // A sequence with everything but id and handle; the request's images and messages are moved
  // from. Errors: InvalidArgument, ResourceExhausted (limits), and the preprocessing's own.
  StatusOr<std::unique_ptr<Sequence>> Process(EngineRequest& req, double t_submit) const;

  // The model's end-of-sequence ids (config + the tokenizer's <|im_end|>, <|endoftext|>).
  const std::vector<int32_t>& eos_ids() const { return eos_ids_; }

 private:
  Status PromptAndImages(EngineRequest& req, Sequence* s) const;
  Status CheckPrompt(const Sequence& s, int max_new_tokens) const;
  void ContentKeys(Sequence* s) const;

  const Qwen2VLModel& model_;
  const Tokenizer* tok_;
  InputLimits limits_;
  std::vector<int32_t> eos_ids_;
};

}  // namespace mineru
