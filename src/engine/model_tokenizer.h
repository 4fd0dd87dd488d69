// engine/model_tokenizer.h — the tokenizer (and chat template) that belong to a model's files.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "model/config.h"
#include "model/gguf_export.h"
#include "model/gguf_model.h"
#include "model/qwen2vl.h"
#include "tokenizer/tokenizer.h"

namespace mineru {

// GGUF: the tokenizer stored in the language-model file. Safetensors: dir/tokenizer.json. Null
// (not an error) when the model has none: a folder without tokenizer.json, or a GGUF whose
// tokenizer.ggml.model is "none" (a model driven with raw ids). A GGUF that names a tokenizer but
// lacks its arrays is an error.
StatusOr<std::unique_ptr<Tokenizer>> LoadModelTokenizer(const ModelFiles& files);

// The same from a --model/--mmproj pair as the command line names them; NotFound, saying the model
// has no vocabulary and runs only on token ids, where the one above gives null.
StatusOr<std::unique_ptr<Tokenizer>> LoadModelTokenizer(const std::string& model, const std::string& mmproj);

// The tokenizer as GGUF metadata for a model of config's vocabulary size (ids the tokenizer does
// not name become "[PAD<id>]", type unused, as llama.cpp's converter writes them).
StatusOr<GgufVocab> GgufVocabOf(const Tokenizer& tok, const ModelConfig& config);

// The chat template a model's files carry, "" when none. Safetensors, in the order llama.cpp's
// converter (gguf-py SpecialVocab) reads them: tokenizer_config.json "chat_template", else
// chat_template.jinja, else chat_template.json "chat_template"; a list of named templates gives its
// "default" one. GGUF: the LM's tokenizer.chat_template. InvalidArgument for a malformed file or a
// template of another type.
StatusOr<std::string> ModelChatTemplate(const ModelFiles& files);

// What `quantize --format gguf` writes as the LM's tokenizer: GgufVocabOf the model's tokenizer
// (no tokens where it has none: a vocabulary-less file) with the model's chat template.
StatusOr<GgufVocab> ModelGgufVocab(const Qwen2VLModel& model);

}  // namespace mineru
