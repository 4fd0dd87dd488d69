// tokenizer/gguf_vocab.h — the tokenizer.json equivalent of a GGUF file's tokenizer.ggml.* keys.
//
// llama.cpp's converter writes a byte-level BPE tokenizer as: tokens (every id's string),
// token_type (1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte), merges ("a b"),
// model "gpt2" and a pre-tokenizer name. For pre "qwen2" (Qwen1.5/2/2-VL) the HF pipeline is:
// NFC normalizer (GGUF has no key for it; applied here as HF does), the Qwen2 split regex, byte
// level; normal tokens form the BPE vocabulary, control tokens are special added tokens and
// user-defined tokens non-special added tokens; unused ids (the [PAD] fill up to the embedding
// size) are left as holes, as in tokenizer.json. One difference cannot be recovered: the converter
// also marks tokens that merely look special (<|fim_*|>, <|repo_name|>, <|file_sep|>) as control,
// so those count as special here (skipped by skip_special_tokens) where HF keeps them.
#pragma once

#include <nlohmann/json.hpp>

#include "base/gguf.h"
#include "base/status.h"

namespace mineru {

// NotFound when f carries no vocabulary (GgufHasNoVocabulary); InvalidArgument when it names a
// tokenizer other than gpt2/qwen2 or its arrays are missing or malformed (a corrupt file).
StatusOr<nlohmann::json> GgufTokenizerJson(const GgufFile& f);

}  // namespace mineru
