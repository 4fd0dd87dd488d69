// tokenizer/tokenizer_internal.h — what the pieces of the tokenizer share, internal to
// mineru_tokenizer (its interface is tokenizer.h): the loaded tokenizer's state (Tokenizer::Impl),
// the added tokens and their trie, the pre-tokenizer's steps, the GPT-2 byte alphabet and the
// checked JSON accessors. Who defines what:
//   tokenizer.cc       Tokenizer's encoding (normalizer, BPE), decoding, accessors; IncrementalDecoder
//   tokenizer_load.cc  loading: tokenizer.json's model, vocab, merges, normalizer, decoder; the id tables
//   pretokenizer.cc    the pre_tokenizer section and cutting text into pieces (PCRE2)
//   added_tokens.cc    the added_tokens section, their trie and splitting text on them
//   byte_level.cc      the GPT-2 byte <-> unicode alphabet
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <iterator>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"
#include "tokenizer/token_tables.h"
#include "tokenizer/tokenizer.h"

namespace mineru {
namespace tokenizer_internal {

using json = nlohmann::json;

// Ids above this are refused at load (they would make the id tables absurdly large).
constexpr int64_t kMaxTokenId = (int64_t{1} << 24) - 1;
// The per-word BPE cache: words up to this many bytes, at most this many entries.
constexpr size_t kCacheMaxWordBytes = 64;
constexpr size_t kCacheMaxEntries = 100000;

// ---------------------------------------------------------------------------------------------
// GPT-2 byte <-> unicode alphabet (byte_level.cc).

struct ByteLevelAlphabet {
  uint32_t byte_to_cp[256];
  int16_t cp_to_byte[324];  // code points used are all < 256 + 68

  ByteLevelAlphabet() {
    std::fill(std::begin(cp_to_byte), std::end(cp_to_byte), int16_t{-1});
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      byte_to_cp[b] = printable ? static_cast<uint32_t>(b) : next++;
      cp_to_byte[byte_to_cp[b]] = static_cast<int16_t>(b);
    }
  }
};

const ByteLevelAlphabet& Alphabet();

// Bytes a token contributes to the decoded text under the ByteLevel decoder: every character mapped
// back through the alphabet, or (if any character is outside it) the token's own UTF-8 bytes.
std::string ByteLevelDecodeToken(std::string_view token);
std::string ByteLevelEncode(std::string_view bytes);

// ---------------------------------------------------------------------------------------------
// Pre-tokenizer (pretokenizer.cc).

// A PCRE2 regex (compiled once, matched from many threads).
class Regex;

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

struct PreTokStep {
  std::shared_ptr<const Regex> regex;  // null: no split (ByteLevel with use_regex=false)
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
  bool prefix_space = false;  // ByteLevel add_prefix_space
};

// ---------------------------------------------------------------------------------------------
// Added tokens (added_tokens.cc): a byte trie, matched leftmost-longest.

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false;
  bool normalized = false;
  bool lstrip = false;
  bool rstrip = false;
  bool single_word = false;
};

class TokenTrie {
 public:
  TokenTrie() { terminal_.push_back(-1); }
  bool empty() const { return terminal_.size() == 1; }

  void Add(std::string_view s, int32_t value);

  // Leftmost-longest match at or after `pos`. Returns false if none.
  bool Find(std::string_view text, size_t pos, size_t* start, size_t* end, int32_t* value) const;

 private:
  std::unordered_map<uint64_t, int32_t> edges_;
  std::vector<int32_t> terminal_;  // per node: index into the added-token list, or -1
  bool first_[256] = {};
};

// A piece of text between added tokens (token < 0), or an added token (index into the list).
struct Segment {
  std::string_view text;
  int32_t token = -1;
};

// Splits text into added tokens of the trie (tokens[value]) and the pieces between them.
void SplitOnAddedTokens(const TokenTrie& trie, const std::vector<AddedToken>& tokens, std::string_view text,
                        std::vector<Segment>* out);

// ---------------------------------------------------------------------------------------------
// JSON helpers (tokenizer_load.cc; no exceptions: every access is checked).

// OK when cond holds, else InvalidArgument "tokenizer.json: <what>".
Status Expect(bool cond, const std::string& what);
// obj[key] as a boolean, dflt when absent or null.
StatusOr<bool> GetBool(const json& obj, const char* key, bool dflt);
// The string "type" of the object obj (named `where` in errors).
StatusOr<std::string> GetType(const json& obj, const std::string& where);

}  // namespace tokenizer_internal

// ---------------------------------------------------------------------------------------------

struct Tokenizer::Impl {
  using json = tokenizer_internal::json;
  using AddedToken = tokenizer_internal::AddedToken;
  using TokenTrie = tokenizer_internal::TokenTrie;
  using PreTokStep = tokenizer_internal::PreTokStep;

  // Vocabulary.
  VocabTable vocab;  // model vocab
  std::unordered_map<std::string, int32_t> added_by_content;
  std::unordered_map<int32_t, size_t> added_by_id;  // the index in `added` that names each added id
  std::vector<uint8_t> id_flags;                    // kPresent | kAdded | kSpecial; its size is vocab_size()
  std::string token_bytes;                          // decoded bytes of every id, concatenated
  std::vector<uint32_t> token_bytes_off;            // size vocab_size + 1
  static constexpr uint8_t kPresent = 1, kAdded = 2, kSpecial = 4;

  // BPE.
  MergeTable merges;
  int32_t byte_ids[256];
  int32_t unk_id = -1;
  bool ignore_merges = false;

  // Added tokens.
  std::vector<AddedToken> added;
  TokenTrie raw_trie;   // normalized == false: matched on the raw text
  TokenTrie norm_trie;  // normalized == true: matched on normalized text

  // Normalizer: utf8proc option sets applied in order.
  std::vector<int> normalizers;

  // Pre-tokenizer.
  std::vector<PreTokStep> pretok;

  // Word cache.
  mutable std::shared_mutex cache_mu;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache;

  // The raw token string of id: an added token's content, else the vocab's text ("" for holes).
  std::string_view TokenText(int32_t id) const {
    if (id_flags[id] & kAdded) return added[added_by_id.at(id)].content;
    return vocab.Text(id);
  }

  Status LoadModel(const json& model);
  Status LoadVocab(const json& v);
  Status LoadMerges(const json& m);
  Status LoadAddedTokens(const json& arr);
  Status LoadNormalizer(const json& n);
  Status LoadPreTokenizer(const json& p);
  Status LoadDecoder(const json& d);
  Status Finish();

  Status Normalize(std::string_view in, std::string* out, bool* changed) const;
  Status PreTokenize(std::string_view text, std::deque<std::string>* arena,
                     std::vector<std::string_view>* pieces) const;
  void BpeWord(std::string_view word, std::vector<int32_t>* out) const;
  void BpeWordUncached(std::string_view word, std::vector<int32_t>* out) const;
  Status EncodeText(std::string_view text, std::vector<int32_t>* ids) const;
};

}  // namespace mineru
