#include "engine/input_processor.h"

#include <xxhash.h>

#include <string>
#include <utility>

#include "engine/chat.h"

namespace mineru {
namespace {

// Content key of an image pad token: never equal to a text token id (top bit set).
uint64_t ImageTokenKey(const BlockHash& image, int64_t index) {
  const uint64_t buf[3] = {image.lo, image.hi, static_cast<uint64_t>(index)};
  return XXH3_64bits(buf, sizeof(buf)) | (1ull << 63);
}

}  // namespace

InputProcessor::InputProcessor(const Qwen2VLModel& model, const Tokenizer* tokenizer, InputLimits limits,
                               std::vector<int32_t> stop_ids)
    : model_(model), tok_(tokenizer), limits_(limits), eos_ids_(std::move(stop_ids)) {}

// Prompt ids (chat template, or the caller's ids with image tokens expanded) and preprocessed
// images.
Status InputProcessor::PromptAndImages(EngineRequest& req, Sequence* s) const {
  if (!req.messages.empty()) {
    if (!tok_) return InvalidArgumentError("this model has no tokenizer: send token ids");
    std::vector<const RgbImage*> ptrs;
    for (const auto& im : req.images) ptrs.push_back(&im);
    MINERU_ASSIGN_OR_RETURN(PreparedPrompt p, PreparePrompt(model_, *tok_, req.messages, ptrs));
    s->prompt = std::move(p.ids);
    s->inputs = std::move(p.images);
    return Status::Ok();
  }
  if (req.prompt_ids.empty()) return InvalidArgumentError("empty prompt");
  std::vector<ImageGrid> grids;
  for (const auto& im : req.images) {
    MINERU_ASSIGN_OR_RETURN(ImageInput in, PreprocessForModel(model_, im));
    grids.push_back(in.grid);
    s->inputs.push_back(std::move(in));
  }
  MINERU_ASSIGN_OR_RETURN(s->prompt, ExpandImageTokens(model_, req.prompt_ids, grids));
  return Status::Ok();
}

Status InputProcessor::CheckPrompt(const Sequence& s, int max_new_tokens) const {
  const int64_t n = static_cast<int64_t>(s.prompt.size());
  if (n > limits_.max_prompt_tokens) {
    return ResourceExhaustedError("prompt of " + std::to_string(n) + " tokens exceeds the limit of " +
                                  std::to_string(limits_.max_prompt_tokens));
  }
  if (n + max_new_tokens > limits_.kv_capacity_tokens) {
    return ResourceExhaustedError("prompt + max_new_tokens (" + std::to_string(n + max_new_tokens) +
                                  ") exceeds the KV cache capacity of " +
                                  std::to_string(limits_.kv_capacity_tokens) + " tokens");
  }
  for (int32_t id : s.prompt) {
    if (id < 0 || id >= model_.config().text.vocab_size)
      return InvalidArgumentError("token id " + std::to_string(id) + " out of range");
  }
  return Status::Ok();
}

// Per prompt token: its content key (the token id, or its image's hash and index) and, for an
// image token, its row of the request's image embeddings.
void InputProcessor::ContentKeys(Sequence* s) const {
  const int32_t image_token = model_.config().image_token_id;
  const size_t n = s->prompt.size();
  s->keys.resize(n);
  s->image_row.assign(n, -1);
  int64_t row = 0, in_image = 0;
  size_t image = 0;
  for (size_t i = 0; i < n; ++i) {
    if (s->prompt[i] == image_token && image < s->inputs.size()) {
      s->keys[i] = ImageTokenKey(s->image_hashes[image], in_image);
      s->image_row[i] = row++;
      if (++in_image == model_.ImageTokens(s->inputs[image].grid)) {
        ++image;
        in_image = 0;
      }
    } else {
      s->keys[i] = static_cast<uint64_t>(s->prompt[i]);
    }
  }
}

StatusOr<std::unique_ptr<Sequence>> InputProcessor::Process(EngineRequest& req, double t_submit) const {
  const ModelConfig& mc = model_.config();
  if (req.max_new_tokens <= 0 || req.max_new_tokens > limits_.max_new_tokens) {
    return InvalidArgumentError("max_new_tokens must be between 1 and " +
                                std::to_string(limits_.max_new_tokens));
  }
  auto s = std::make_unique<Sequence>();
  MINERU_RETURN_IF_ERROR(PromptAndImages(req, s.get()));
  MINERU_RETURN_IF_ERROR(CheckPrompt(*s, req.max_new_tokens));
  std::vector<ImageGrid> grids;
  for (const auto& in : s->inputs) grids.push_back(in.grid);
  MINERU_ASSIGN_OR_RETURN(
      s->pos, ComputeMropePositions(s->prompt, grids, mc.vision.spatial_merge_size, mc.image_token_id));
  for (const auto& im : req.images) s->image_hashes.push_back(HashImage(im, model_.image_config()));
  ContentKeys(s.get());

  s->sampler = std::make_unique<SequenceSampler>(req.sampling, s->prompt);
  if (tok_) s->detok = std::make_unique<IncrementalDecoder>(*tok_, req.skip_special_tokens);
  s->max_new = req.max_new_tokens;
  s->priority = req.priority;
  s->ignore_eos = req.ignore_eos;
  s->stops = eos_ids_;
  s->stops.insert(s->stops.end(), req.stop_ids.begin(), req.stop_ids.end());
  s->t_submit = t_submit;
  s->deadline = req.timeout_s > 0 ? t_submit + req.timeout_s : 0;
  s->comp.prompt_tokens = static_cast<int64_t>(s->prompt.size());
  return s;
}

}  // namespace mineru
