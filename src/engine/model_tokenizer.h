// engine/model_tokenizer.h — the tokenizer that belongs to a model's files.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "model/config.h"
#include "model/gguf_export.h"
#include "model/gguf_model.h"
#include "tokenizer/tokenizer.h"

namespace mineru {

// GGUF: the tokenizer stored in the language-model file. Safetensors: dir/tokenizer.json, or
// null (not an error) when the folder has none (a model driven with raw ids).
StatusOr<std::unique_ptr<Tokenizer>> LoadModelTokenizer(const ModelFiles& files);

// The same from a --model/--mmproj pair as the command line names them; NotFound when a
// safetensors folder has no tokenizer.json.
StatusOr<std::unique_ptr<Tokenizer>> LoadModelTokenizer(const std::string& model, const std::string& mmproj);

// The tokenizer as GGUF metadata for a model of config's vocabulary size (ids the tokenizer does
// not name become "[PAD<id>]", type unused, as llama.cpp's converter writes them).
StatusOr<GgufVocab> GgufVocabOf(const Tokenizer& tok, const ModelConfig& config);

}  // namespace mineru
