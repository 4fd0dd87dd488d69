// model/gguf_export.h — writes a loaded model as llama.cpp's GGUF pair (the layout
// model/gguf_model.h reads and llama.cpp's converter writes): the `qwen2vl` language model and the
// `clip` mmproj with the `qwen2vl_merger` projector. Tensors are written in the format they have
// in memory (as stored, or quantized at load): F32/F16/BF16 and Q8_0/Q4_0 (q4_g128 has no GGUF
// type and is refused). The patch kernel is split into its two frames (F32); qkv into q, k, v.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "model/qwen2vl.h"

namespace mineru {

// The tokenizer as GGUF stores it (tokenizer/gguf_vocab.h): one entry per id up to the
// embedding size (holes as "[PAD<id>]", type 5). No tokens: the model has no vocabulary, written
// as llama.cpp's converter writes one (tokenizer.ggml.model "none", no arrays); the bos/eos ids
// are still written (llama.cpp ignores them there; our loader stops generation at eos).
struct GgufVocab {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;  // 1 normal, 3 control, 4 user-defined, 5 unused
  std::vector<std::string> merges;
  int32_t bos_id = -1, eos_id = -1;
  std::string chat_template;  // tokenizer.chat_template (Jinja) when not empty
};

Status WriteGgufPair(const Qwen2VLModel& model, const GgufVocab& vocab, const std::string& name,
                     const std::string& lm_path, const std::string& mmproj_path);

}  // namespace mineru
