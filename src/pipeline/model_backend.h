// pipeline/model_backend.h — the Backend that runs the MinerU2.5 model through the engine.
#pragma once

#include <memory>

#include "base/thread_pool.h"
#include "engine/sampler.h"
#include "model/qwen2vl.h"
#include "pipeline/backend.h"
#include "tokenizer/tokenizer.h"

namespace mineru::pipeline {

struct ModelBackendOptions {
  int max_layout_tokens = 4096;  // the reference sends no cap (model length); we bound each request
  int max_block_tokens = 4096;
};

// model, tokenizer and pool must outlive the backend.
std::unique_ptr<Backend> MakeModelBackend(const Qwen2VLModel& model, const Tokenizer& tokenizer, ThreadPool* pool,
                                          const ModelBackendOptions& options = {});

// Converts the pipeline's per-task sampling settings to the engine's.
mineru::SamplingParams ToEngineSampling(const SamplingParams& p);

}  // namespace mineru::pipeline
