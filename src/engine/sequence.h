// engine/sequence.h — one request inside the engine (internal to engine/). The input processor
// makes it on the submitting thread; from then on only the engine's loop thread touches it:
// the model runner reads its prompt and fills its image embeddings, the output processor
// appends its tokens and completes its handle. Owned by the engine core (Engine::seqs_).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/engine.h"
#include "engine/generate.h"
#include "engine/image_cache.h"
#include "engine/sampler.h"
#include "model/mrope.h"
#include "model/qwen2vl.h"
#include "tokenizer/tokenizer.h"

namespace mineru {

struct Sequence {
  int64_t id = 0;
  std::shared_ptr<RequestHandle> handle;
  std::vector<int32_t> prompt;
  MropePositions pos;
  std::vector<int64_t> image_row;  // per prompt token: row of `embeds`, or -1
  std::vector<ImageInput> inputs;  // preprocessed images; dropped once encoded
  std::vector<BlockHash> image_hashes;
  std::vector<float> embeds;   // image embeddings of this request [rows, hidden], in prompt order
  std::vector<uint64_t> keys;  // per prompt token: its prefix-cache content key
  std::vector<int32_t> generated;
  std::unique_ptr<SequenceSampler> sampler;
  std::unique_ptr<IncrementalDecoder> detok;  // null without a tokenizer
  int max_new = 0;
  int priority = 0;
  bool ignore_eos = false;
  std::vector<int32_t> stops;
  double t_submit = 0, t_first = 0, deadline = 0;
  Completion comp;
};

}  // namespace mineru
