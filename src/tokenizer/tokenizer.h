// tokenizer/tokenizer.h — Hugging Face `tokenizer.json` byte-level BPE (the Qwen2 / Qwen2-VL tokenizer).
//
// Supported tokenizer.json components (anything else is refused at load with a Status):
//   normalizer    : null, NFC, NFD, NFKC, NFKD, or a Sequence of these (utf8proc)
//   pre_tokenizer : ByteLevel, Split (Regex or String pattern, any behaviour, invert), or a Sequence
//                   of these; a ByteLevel step is required (the BPE runs on bytes)
//   model         : BPE (vocab + merges as "a b" strings or [a, b] pairs; optional unk_token,
//                   ignore_merges; no dropout, no continuing_subword_prefix / end_of_word_suffix)
//   decoder       : ByteLevel (or a Sequence holding only ByteLevel)
//   added_tokens  : content / special / normalized / lstrip / rstrip / single_word
// The post_processor is ignored: Encode never adds special tokens.
//
// Thread safety: a loaded Tokenizer is immutable apart from an internal word cache guarded by a
// lock; Encode/Decode may be called from many threads at once. IncrementalDecoder is per stream.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"

namespace mineru {

class GgufFile;

class Tokenizer {
 public:
  static StatusOr<std::unique_ptr<Tokenizer>> LoadFromFile(const std::string& tokenizer_json_path);
  static StatusOr<std::unique_ptr<Tokenizer>> LoadFromJson(std::string_view json_text);
  // The tokenizer a llama.cpp GGUF language model carries (tokenizer.ggml.*: model "gpt2",
  // pre-tokenizer "qwen2"), encoding and decoding as its tokenizer.json does (tokenizer/gguf_vocab.h).
  // NotFound when the file declares no vocabulary (tokenizer.ggml.model "none").
  static StatusOr<std::unique_ptr<Tokenizer>> LoadFromGguf(const std::string& gguf_path);
  static StatusOr<std::unique_ptr<Tokenizer>> LoadFromGguf(const GgufFile& gguf);
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Encodes without adding special tokens; added/special tokens written in the text are matched first.
  // Invalid UTF-8 input -> InvalidArgument error (never a crash).
  StatusOr<std::vector<int32_t>> Encode(std::string_view text) const;
  // Byte-level decode; ids out of range -> InvalidArgument. Invalid UTF-8 byte sequences become U+FFFD as
  // HF does. Ids inside the range that name no token (holes in the id space) are dropped, as HF does.
  StatusOr<std::string> Decode(const std::vector<int32_t>& ids, bool skip_special_tokens = false) const;

  std::optional<int32_t> TokenToId(std::string_view token) const;  // vocab or added token
  std::string IdToToken(int32_t id) const;                         // raw token string ("" if out of range)
  bool IsSpecial(int32_t id) const;                                // added token with special=true
  bool IsAdded(int32_t id) const;                                  // any added token
  int32_t vocab_size() const;                                      // max id + 1 over vocab and added tokens

  // The raw bytes one token contributes to decoded text (before UTF-8 repair); empty for holes and
  // out-of-range ids. Used by IncrementalDecoder.
  std::string_view TokenBytes(int32_t id) const;
  // All added tokens (id, content), in id order.
  std::vector<std::pair<int32_t, std::string>> AddedTokens() const;
  // The BPE merges as "a b" (raw token strings), in rank order (for writing GGUF metadata).
  std::vector<std::string> Merges() const;

 private:
  struct Impl;
  static StatusOr<std::unique_ptr<Tokenizer>> LoadFromJsonObject(const nlohmann::json& j);
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Streams text as ids arrive; never emits half of a UTF-8 character; concatenated Push outputs +
// Flush() == Decode(all ids). Out-of-range ids are ignored (Decode would refuse them).
class IncrementalDecoder {
 public:
  explicit IncrementalDecoder(const Tokenizer& tok, bool skip_special_tokens = false);
  std::string Push(int32_t id);  // returns newly completed text (may be empty)
  std::string Flush();           // emits any pending incomplete bytes as U+FFFD
  // Bytes held back because they may be the start of a multi-byte character.
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer& tok_;
  bool skip_special_;
  std::string pending_;
};

}  // namespace mineru
