// engine/generate.h — one request, start to finish, on one sequence: encode the images, prefill
// the prompt, decode with the sampler until a stop token or the token limit.
//
// This is the single-stream path (`mineru-cpp generate` and tests); serving goes through the
// batching Engine (engine.h). Images arrive preprocessed (pixel_values + grid) so this layer never
// sees pixels.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "engine/finish_reason.h"
#include "engine/sampler.h"
#include "model/qwen2vl.h"

namespace mineru {

struct ImageInput {
  std::vector<float> pixel_values;  // [patches, patch_dim]
  ImageGrid grid;
};

struct GenerateOptions {
  int max_new_tokens = 256;
  bool ignore_eos = false;
  SamplingParams sampling;
  std::vector<int32_t> stop_ids;  // empty: the config's eos ids
  int64_t max_prompt_tokens = 32768;
};

struct GenerateResult {
  std::vector<int32_t> ids;                          // generated tokens (a final stop token included)
  FinishReason finish_reason = FinishReason::kNone;  // then kStop, kLength or kCancelled
  int64_t prompt_tokens = 0;
  double vision_s = 0, prefill_s = 0, decode_s = 0;
};

// Called after each generated token; return false to cancel.
using TokenCallback = std::function<bool(int32_t token)>;

// prompt_ids: each image already expanded to its ImageTokens(grid) pad tokens, in image order.
// The kernels run with model.kernel_config() on pool (may be null).
StatusOr<GenerateResult> Generate(const Qwen2VLModel& model, const std::vector<int32_t>& prompt_ids,
                                  const std::vector<ImageInput>& images, const GenerateOptions& options,
                                  ThreadPool* pool, const TokenCallback& on_token = {});

// Expands each single image token in ids to the per-image pad count (images in order).
StatusOr<std::vector<int32_t>> ExpandImageTokens(const Qwen2VLModel& model, const std::vector<int32_t>& ids,
                                                 const std::vector<ImageGrid>& grids);

}  // namespace mineru
