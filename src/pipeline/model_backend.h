// pipeline/model_backend.h — the Backend that runs the MinerU2.5 model through the batching
// Engine: a page's crops are submitted together and decode in one batch; several pages may be in
// flight at once.
#pragma once

#include <memory>

#include "engine/engine.h"
#include "pipeline/backend.h"

namespace mineru::pipeline {

struct ModelBackendOptions {
  int max_layout_tokens = 4096;  // the reference sends no cap (model length); we bound each request
  int max_block_tokens = 4096;
};

// engine must outlive the backend.
std::unique_ptr<Backend> MakeModelBackend(Engine* engine, const ModelBackendOptions& options = {});

// Converts the pipeline's per-task sampling settings to the engine's.
mineru::SamplingParams ToEngineSampling(const MinerUSampling& p);

}  // namespace mineru::pipeline
