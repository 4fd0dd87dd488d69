// tokenizer/tokenizer.cc — loading tokenizer.json, encoding (added tokens -> normalizer ->
// pre-tokenizer -> byte-level BPE) and decoding (ByteLevel decoder + lossy UTF-8).
#include "tokenizer/tokenizer.h"
#include "base/json_parse.h"

#include "tokenizer/gguf_vocab.h"

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>
#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <new>
#include <nlohmann/json.hpp>
#include <shared_mutex>
#include <unordered_map>
#include <utility>

#include "base/mapped_file.h"
#include "base/utf8.h"
#include "tokenizer/token_tables.h"

namespace mineru {
namespace {

using json = nlohmann::json;

// Ids above this are refused at load (they would make the id tables absurdly large).
constexpr int64_t kMaxTokenId = (int64_t{1} << 24) - 1;
// The per-word BPE cache: words up to this many bytes, at most this many entries.
constexpr size_t kCacheMaxWordBytes = 64;
constexpr size_t kCacheMaxEntries = 100000;

// ---------------------------------------------------------------------------------------------
// GPT-2 byte <-> unicode alphabet.

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

const ByteLevelAlphabet& Alphabet() {
  static const ByteLevelAlphabet kAlphabet;
  return kAlphabet;
}

// Bytes a token contributes to the decoded text under the ByteLevel decoder: every character mapped
// back through the alphabet, or (if any character is outside it) the token's own UTF-8 bytes.
std::string ByteLevelDecodeToken(std::string_view token) {
  const ByteLevelAlphabet& a = Alphabet();
  std::string out;
  out.reserve(token.size());
  size_t i = 0;
  while (i < token.size()) {
    int len;
    const uint32_t cp = utf8::DecodeAt(token, i, &len);
    if (cp >= 324 || a.cp_to_byte[cp] < 0) return std::string(token);
    out.push_back(static_cast<char>(a.cp_to_byte[cp]));
    i += static_cast<size_t>(len);
  }
  return out;
}

std::string ByteLevelEncode(std::string_view bytes) {
  const ByteLevelAlphabet& a = Alphabet();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) utf8::AppendCodepoint(a.byte_to_cp[c], &out);
  return out;
}

bool IsAscii(std::string_view s) {
  for (unsigned char c : s)
    if (c & 0x80) return false;
  return true;
}

// ---------------------------------------------------------------------------------------------
// PCRE2 regex (compiled once, matched from many threads).

class Regex {
 public:
  static StatusOr<std::unique_ptr<Regex>> Compile(const std::string& pattern, bool literal) {
    int err = 0;
    PCRE2_SIZE err_off = 0;
    // PCRE2_LITERAL refuses PCRE2_UCP (which only matters for escapes anyway).
    const uint32_t opts = literal ? (PCRE2_UTF | PCRE2_LITERAL) : (PCRE2_UTF | PCRE2_UCP);
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), opts, &err,
                                     &err_off, nullptr);
    if (code == nullptr) {
      PCRE2_UCHAR buf[256];
      pcre2_get_error_message(err, buf, sizeof(buf));
      return InvalidArgumentError("pre-tokenizer regex does not compile at offset " +
                                  std::to_string(err_off) + ": " + reinterpret_cast<const char*>(buf));
    }
    std::unique_ptr<Regex> re(new Regex(code));
    // JIT is an optimisation; without it (unsupported CPU, no executable memory) matching still works.
    (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
    return re;
  }
  ~Regex() { pcre2_code_free(code_); }

  // Appends [start, end) of every non-empty, non-overlapping match in `text` (valid UTF-8).
  Status FindAll(std::string_view text, std::vector<std::pair<size_t, size_t>>* out) const {
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(code_, nullptr);
    if (md == nullptr) return ResourceExhaustedError("pcre2_match_data_create failed");
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    size_t offset = 0;
    Status st;
    while (offset <= text.size()) {
      int rc = pcre2_match(code_, subject, text.size(), offset, PCRE2_NO_UTF_CHECK, md, nullptr);
      if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
        rc = pcre2_match(code_, subject, text.size(), offset, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md, nullptr);
      }
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc < 0) {
        PCRE2_UCHAR buf[256];
        pcre2_get_error_message(rc, buf, sizeof(buf));
        st = ResourceExhaustedError(std::string("pre-tokenizer regex match failed: ") +
                                    reinterpret_cast<const char*>(buf));
        break;
      }
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
      const size_t s = ov[0], e = ov[1];
      if (e > s) {
        out->emplace_back(s, e);
        offset = e;
      } else {
        // Empty match: not a piece; step over one character.
        if (s >= text.size()) break;
        int len;
        utf8::DecodeAt(text, s, &len);
        offset = s + static_cast<size_t>(len);
      }
    }
    pcre2_match_data_free(md);
    return st;
  }

 private:
  explicit Regex(pcre2_code* code) : code_(code) {}
  pcre2_code* code_;
};

// The regex HF's ByteLevel pre-tokenizer uses when use_regex is true (GPT-2's).
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// ---------------------------------------------------------------------------------------------
// Pre-tokenizer.

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

struct PreTokStep {
  std::shared_ptr<const Regex> regex;  // null: no split (ByteLevel with use_regex=false)
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
  bool prefix_space = false;  // ByteLevel add_prefix_space
};

struct Span {
  size_t b, e;
  bool match;
};

// Turns the matches of a Split into pieces following HF's SplitDelimiterBehavior.
void ApplyBehavior(const std::vector<Span>& in, SplitBehavior behavior,
                   std::vector<std::pair<size_t, size_t>>* out) {
  switch (behavior) {
    case SplitBehavior::kRemoved:
      for (const Span& s : in)
        if (!s.match) out->emplace_back(s.b, s.e);
      return;
    case SplitBehavior::kIsolated:
      for (const Span& s : in) out->emplace_back(s.b, s.e);
      return;
    case SplitBehavior::kMergedWithPrevious: {
      bool prev_match = false;
      const size_t base = out->size();
      for (const Span& s : in) {
        if (s.match && !prev_match && out->size() > base) {
          out->back().second = s.e;
        } else {
          out->emplace_back(s.b, s.e);
        }
        prev_match = s.match;
      }
      return;
    }
    case SplitBehavior::kMergedWithNext: {
      std::vector<std::pair<size_t, size_t>> rev;
      bool prev_match = false;
      for (auto it = in.rbegin(); it != in.rend(); ++it) {
        if (it->match && !prev_match && !rev.empty()) {
          rev.back().first = it->b;
        } else {
          rev.emplace_back(it->b, it->e);
        }
        prev_match = it->match;
      }
      out->insert(out->end(), rev.rbegin(), rev.rend());
      return;
    }
    case SplitBehavior::kContiguous: {
      bool prev_match = false;
      const size_t base = out->size();
      for (const Span& s : in) {
        if (s.match == prev_match && out->size() > base) {
          out->back().second = s.e;
        } else {
          out->emplace_back(s.b, s.e);
        }
        prev_match = s.match;
      }
      return;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Added tokens: a byte trie, matched leftmost-longest.

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

  void Add(std::string_view s, int32_t value) {
    if (s.empty()) return;
    int32_t node = 0;
    for (unsigned char c : s) {
      const uint64_t key = (static_cast<uint64_t>(node) << 8) | c;
      auto it = edges_.find(key);
      if (it == edges_.end()) {
        const int32_t child = static_cast<int32_t>(terminal_.size());
        terminal_.push_back(-1);
        edges_.emplace(key, child);
        node = child;
      } else {
        node = it->second;
      }
    }
    first_[static_cast<unsigned char>(s[0])] = true;
    terminal_[node] = value;
  }

  // Leftmost-longest match at or after `pos`. Returns false if none.
  bool Find(std::string_view text, size_t pos, size_t* start, size_t* end, int32_t* value) const {
    for (size_t i = pos; i < text.size(); ++i) {
      if (!first_[static_cast<unsigned char>(text[i])]) continue;
      int32_t node = 0;
      int32_t best = -1;
      size_t best_end = 0;
      for (size_t j = i; j < text.size(); ++j) {
        auto it = edges_.find((static_cast<uint64_t>(node) << 8) | static_cast<unsigned char>(text[j]));
        if (it == edges_.end()) break;
        node = it->second;
        if (terminal_[node] >= 0) {
          best = terminal_[node];
          best_end = j + 1;
        }
      }
      if (best >= 0) {
        *start = i;
        *end = best_end;
        *value = best;
        return true;
      }
    }
    return false;
  }

 private:
  std::unordered_map<uint64_t, int32_t> edges_;
  std::vector<int32_t> terminal_;  // per node: index into the added-token list, or -1
  bool first_[256] = {};
};

// \w of Rust's regex crate, near enough: letters, marks, decimal digits, connector punctuation.
bool IsWordChar(uint32_t cp) {
  if (cp < 0x80)
    return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || cp == '_';
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      return cp == 0x200C || cp == 0x200D;
  }
}

// A piece of text between added tokens (token < 0), or an added token (index into the list).
struct Segment {
  std::string_view text;
  int32_t token = -1;
};

void SplitOnAddedTokens(const TokenTrie& trie, const std::vector<AddedToken>& tokens, std::string_view text,
                        std::vector<Segment>* out) {
  if (trie.empty()) {
    if (!text.empty()) out->push_back({text, -1});
    return;
  }
  size_t done = 0;    // end of the last emitted piece
  size_t search = 0;  // where to look for the next match
  size_t s, e;
  int32_t idx;
  while (search < text.size() && trie.Find(text, search, &s, &e, &idx)) {
    const AddedToken& t = tokens[idx];
    if (t.single_word) {
      int len;
      const bool word_before = s > 0 && IsWordChar(utf8::DecodeBefore(text, s, &len));
      const bool word_after = e < text.size() && IsWordChar(utf8::DecodeAt(text, e, &len));
      if (word_before || word_after) {
        search = e;
        continue;
      }
    }
    if (t.lstrip) {
      while (s > done) {
        int len;
        const uint32_t cp = utf8::DecodeBefore(text, s, &len);
        if (!utf8::IsWhitespace(cp)) break;
        s -= static_cast<size_t>(len);
      }
    }
    if (t.rstrip) {
      while (e < text.size()) {
        int len;
        const uint32_t cp = utf8::DecodeAt(text, e, &len);
        if (!utf8::IsWhitespace(cp)) break;
        e += static_cast<size_t>(len);
      }
    }
    if (s > done) out->push_back({text.substr(done, s - done), -1});
    out->push_back({std::string_view(), idx});
    done = e;
    search = e;
  }
  if (done < text.size()) out->push_back({text.substr(done), -1});
}

// ---------------------------------------------------------------------------------------------
// JSON helpers (no exceptions: every access is checked).

Status Expect(bool cond, const std::string& what) {
  return cond ? Status::Ok() : InvalidArgumentError("tokenizer.json: " + what);
}

StatusOr<bool> GetBool(const json& obj, const char* key, bool dflt) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return dflt;
  if (!it->is_boolean())
    return InvalidArgumentError(std::string("tokenizer.json: '") + key + "' must be a boolean");
  return it->get<bool>();
}

StatusOr<std::string> GetType(const json& obj, const std::string& where) {
  if (!obj.is_object()) return InvalidArgumentError("tokenizer.json: " + where + " must be an object");
  auto it = obj.find("type");
  if (it == obj.end() || !it->is_string())
    return InvalidArgumentError("tokenizer.json: " + where + " has no string 'type'");
  return it->get<std::string>();
}

// The BPE options HF accepts but this tokenizer does not implement (a continuing-subword prefix, an
// end-of-word suffix, dropout, byte fallback): an error when any is set.
Status CheckUnsupportedBpeOptions(const json& model) {
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    auto it = model.find(key);
    if (it != model.end() && !it->is_null()) {
      MINERU_RETURN_IF_ERROR(Expect(it->is_string(), std::string("model.") + key + " must be a string"));
      if (!it->get_ref<const std::string&>().empty())
        return UnimplementedError(std::string("tokenizer.json: model.") + key + " is not supported");
    }
  }
  auto dropout_it = model.find("dropout");
  if (dropout_it != model.end() && !dropout_it->is_null()) {
    MINERU_RETURN_IF_ERROR(Expect(dropout_it->is_number(), "model.dropout must be a number"));
    if (dropout_it->get<double>() != 0.0)
      return UnimplementedError("tokenizer.json: BPE dropout is not supported");
  }
  MINERU_ASSIGN_OR_RETURN(bool byte_fallback, GetBool(model, "byte_fallback", false));
  if (byte_fallback) return UnimplementedError("tokenizer.json: BPE byte_fallback is not supported");
  return Status::Ok();
}

// One entry of model.merges ("a b" or ["a", "b"]) as its two halves, viewing into `e`.
Status SplitMerge(const json& e, size_t rank, std::string_view* a, std::string_view* b) {
  if (e.is_string()) {
    const std::string& s = e.get_ref<const std::string&>();
    const size_t sp = s.find(' ');
    if (sp == std::string::npos)
      return InvalidArgumentError("tokenizer.json: merge #" + std::to_string(rank) + " '" + s +
                                  "' has no space");
    *a = std::string_view(s).substr(0, sp);
    *b = std::string_view(s).substr(sp + 1);
    return Status::Ok();
  }
  if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
    *a = e[0].get_ref<const std::string&>();
    *b = e[1].get_ref<const std::string&>();
    return Status::Ok();
  }
  return InvalidArgumentError("tokenizer.json: merge #" + std::to_string(rank) +
                              " is neither \"a b\" nor [\"a\", \"b\"]");
}

}  // namespace

// ---------------------------------------------------------------------------------------------

struct Tokenizer::Impl {
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

Status Tokenizer::Impl::LoadModel(const json& model) {
  if (!model.is_object()) return InvalidArgumentError("tokenizer.json: 'model' must be an object");
  auto type_it = model.find("type");
  if (type_it != model.end()) {
    MINERU_RETURN_IF_ERROR(Expect(type_it->is_string(), "model.type must be a string"));
    const std::string type = type_it->get<std::string>();
    if (type != "BPE") return UnimplementedError("tokenizer.json: model type '" + type + "' (only BPE)");
  }
  auto vocab_it = model.find("vocab");
  MINERU_RETURN_IF_ERROR(Expect(vocab_it != model.end(), "model has no 'vocab'"));
  MINERU_RETURN_IF_ERROR(Expect(vocab_it->is_object(), "model.vocab must be an object"));
  auto merges_it = model.find("merges");
  MINERU_RETURN_IF_ERROR(Expect(merges_it != model.end(), "model has no 'merges'"));
  MINERU_RETURN_IF_ERROR(Expect(merges_it->is_array(), "model.merges must be an array"));
  MINERU_RETURN_IF_ERROR(CheckUnsupportedBpeOptions(model));
  MINERU_ASSIGN_OR_RETURN(ignore_merges, GetBool(model, "ignore_merges", false));

  MINERU_RETURN_IF_ERROR(LoadVocab(*vocab_it));
  MINERU_RETURN_IF_ERROR(LoadMerges(*merges_it));

  auto unk_it = model.find("unk_token");
  if (unk_it != model.end() && !unk_it->is_null()) {
    MINERU_RETURN_IF_ERROR(Expect(unk_it->is_string(), "model.unk_token must be a string"));
    unk_id = vocab.Find(unk_it->get<std::string>());
    if (unk_id < 0) return InvalidArgumentError("tokenizer.json: model.unk_token is not in the vocab");
  }

  const ByteLevelAlphabet& alpha = Alphabet();
  for (int b = 0; b < 256; ++b) {
    std::string ch;
    utf8::AppendCodepoint(alpha.byte_to_cp[b], &ch);
    byte_ids[b] = vocab.Find(ch);
  }
  return Status::Ok();
}

// model.vocab (token -> id) into vocab and id_flags (ids may leave gaps).
Status Tokenizer::Impl::LoadVocab(const json& v) {
  std::vector<std::pair<std::string_view, int32_t>> entries;
  entries.reserve(v.size());
  size_t text_bytes = 0;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (!it.value().is_number_integer())
      return InvalidArgumentError("tokenizer.json: vocab id of '" + it.key() + "' is not an integer");
    const int64_t id = it.value().get<int64_t>();
    if (id < 0 || id > kMaxTokenId)
      return InvalidArgumentError("tokenizer.json: vocab id " + std::to_string(id) + " out of range");
    entries.emplace_back(it.key(), static_cast<int32_t>(id));  // the key lives as long as v
    text_bytes += it.key().size();
  }
  // The tables address the texts (and their decoded bytes) with 32-bit offsets.
  if (text_bytes >= (size_t{1} << 31))
    return InvalidArgumentError("tokenizer.json: the vocab's texts exceed 2 GiB");
  vocab.Build(entries);
  id_flags.assign(static_cast<size_t>(vocab.id_limit()), 0);
  for (int32_t id = 0; id < vocab.id_limit(); ++id) {
    if (vocab.Has(id)) id_flags[id] = kPresent;
  }
  return Status::Ok();
}

// model.merges into merges: (left id, right id) -> (rank, merged id). Needs the vocab loaded.
Status Tokenizer::Impl::LoadMerges(const json& m) {
  merges.Reserve(m.size());
  std::string joined;
  for (size_t rank = 0; rank < m.size(); ++rank) {
    std::string_view a, b;
    MINERU_RETURN_IF_ERROR(SplitMerge(m[rank], rank, &a, &b));
    joined.assign(a.data(), a.size());
    joined.append(b.data(), b.size());
    const int32_t ia = vocab.Find(a), ib = vocab.Find(b), inew = vocab.Find(joined);
    if (ia < 0 || ib < 0 || inew < 0)
      return InvalidArgumentError("tokenizer.json: merge #" + std::to_string(rank) +
                                  " uses a token not in the vocab");
    // Later duplicates win, as in HF (its merge map is built by inserting in order).
    merges.Put(ia, ib, MergeTable::Merge{static_cast<int32_t>(rank), inew});
  }
  return Status::Ok();
}

Status Tokenizer::Impl::LoadAddedTokens(const json& arr) {
  if (arr.is_null()) return Status::Ok();
  MINERU_RETURN_IF_ERROR(Expect(arr.is_array(), "'added_tokens' must be an array"));
  for (const json& t : arr) {
    MINERU_RETURN_IF_ERROR(Expect(t.is_object(), "every added token must be an object"));
    auto id_it = t.find("id");
    auto content_it = t.find("content");
    MINERU_RETURN_IF_ERROR(
        Expect(id_it != t.end() && id_it->is_number_integer(), "added token without integer 'id'"));
    MINERU_RETURN_IF_ERROR(
        Expect(content_it != t.end() && content_it->is_string(), "added token without string 'content'"));
    AddedToken a;
    const int64_t id = id_it->get<int64_t>();
    if (id < 0 || id > kMaxTokenId)
      return InvalidArgumentError("tokenizer.json: added token id " + std::to_string(id) + " out of range");
    a.id = static_cast<int32_t>(id);
    a.content = content_it->get<std::string>();
    if (!utf8::IsValid(a.content))
      return InvalidArgumentError("tokenizer.json: added token is not valid UTF-8");
    MINERU_ASSIGN_OR_RETURN(a.special, GetBool(t, "special", false));
    MINERU_ASSIGN_OR_RETURN(a.normalized, GetBool(t, "normalized", !a.special));
    MINERU_ASSIGN_OR_RETURN(a.lstrip, GetBool(t, "lstrip", false));
    MINERU_ASSIGN_OR_RETURN(a.rstrip, GetBool(t, "rstrip", false));
    MINERU_ASSIGN_OR_RETURN(a.single_word, GetBool(t, "single_word", false));
    added.push_back(std::move(a));
  }
  return Status::Ok();
}

Status Tokenizer::Impl::LoadNormalizer(const json& n) {
  if (n.is_null()) return Status::Ok();
  MINERU_ASSIGN_OR_RETURN(std::string type, GetType(n, "normalizer"));
  if (type == "Sequence") {
    auto it = n.find("normalizers");
    MINERU_RETURN_IF_ERROR(
        Expect(it != n.end() && it->is_array(), "normalizer Sequence without 'normalizers'"));
    for (const json& sub : *it) MINERU_RETURN_IF_ERROR(LoadNormalizer(sub));
    return Status::Ok();
  }
  if (type == "NFC") {
    normalizers.push_back(UTF8PROC_STABLE | UTF8PROC_COMPOSE);
  } else if (type == "NFD") {
    normalizers.push_back(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE);
  } else if (type == "NFKC") {
    normalizers.push_back(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
  } else if (type == "NFKD") {
    normalizers.push_back(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT);
  } else {
    return UnimplementedError("tokenizer.json: normalizer '" + type + "' is not supported");
  }
  return Status::Ok();
}

Status Tokenizer::Impl::LoadPreTokenizer(const json& p) {
  if (p.is_null()) return UnimplementedError("tokenizer.json: a ByteLevel pre_tokenizer is required");
  MINERU_ASSIGN_OR_RETURN(std::string type, GetType(p, "pre_tokenizer"));
  std::vector<const json*> steps;
  if (type == "Sequence") {
    auto it = p.find("pretokenizers");
    MINERU_RETURN_IF_ERROR(
        Expect(it != p.end() && it->is_array(), "pre_tokenizer Sequence without 'pretokenizers' array"));
    for (const json& s : *it) steps.push_back(&s);
  } else {
    steps.push_back(&p);
  }
  bool byte_level = false;
  for (const json* sp : steps) {
    const json& s = *sp;
    MINERU_ASSIGN_OR_RETURN(std::string t, GetType(s, "pre_tokenizer step"));
    if (byte_level)
      return UnimplementedError("tokenizer.json: pre_tokenizer steps after ByteLevel are not supported");
    PreTokStep step;
    if (t == "ByteLevel") {
      byte_level = true;
      MINERU_ASSIGN_OR_RETURN(step.prefix_space, GetBool(s, "add_prefix_space", true));
      MINERU_ASSIGN_OR_RETURN(bool use_regex, GetBool(s, "use_regex", true));
      if (use_regex) {
        MINERU_ASSIGN_OR_RETURN(auto re, Regex::Compile(kGpt2Pattern, false));
        step.regex = std::move(re);
      }
    } else if (t == "Split") {
      auto pat = s.find("pattern");
      MINERU_RETURN_IF_ERROR(Expect(pat != s.end() && pat->is_object(), "Split without 'pattern' object"));
      auto rx = pat->find("Regex");
      auto str = pat->find("String");
      if (rx != pat->end() && rx->is_string()) {
        MINERU_ASSIGN_OR_RETURN(auto re, Regex::Compile(rx->get<std::string>(), false));
        step.regex = std::move(re);
      } else if (str != pat->end() && str->is_string()) {
        MINERU_ASSIGN_OR_RETURN(auto re, Regex::Compile(str->get<std::string>(), true));
        step.regex = std::move(re);
      } else {
        return InvalidArgumentError("tokenizer.json: Split pattern needs a string 'Regex' or 'String'");
      }
      auto beh = s.find("behavior");
      MINERU_RETURN_IF_ERROR(Expect(beh != s.end() && beh->is_string(), "Split without string 'behavior'"));
      const std::string& b = beh->get_ref<const std::string&>();
      if (b == "Removed")
        step.behavior = SplitBehavior::kRemoved;
      else if (b == "Isolated")
        step.behavior = SplitBehavior::kIsolated;
      else if (b == "MergedWithPrevious")
        step.behavior = SplitBehavior::kMergedWithPrevious;
      else if (b == "MergedWithNext")
        step.behavior = SplitBehavior::kMergedWithNext;
      else if (b == "Contiguous")
        step.behavior = SplitBehavior::kContiguous;
      else
        return InvalidArgumentError("tokenizer.json: unknown Split behavior '" + b + "'");
      MINERU_ASSIGN_OR_RETURN(step.invert, GetBool(s, "invert", false));
    } else {
      return UnimplementedError("tokenizer.json: pre_tokenizer '" + t + "' is not supported");
    }
    pretok.push_back(std::move(step));
  }
  if (!byte_level) return UnimplementedError("tokenizer.json: a ByteLevel pre_tokenizer is required");
  return Status::Ok();
}

Status Tokenizer::Impl::LoadDecoder(const json& d) {
  if (d.is_null()) return UnimplementedError("tokenizer.json: a ByteLevel decoder is required");
  MINERU_ASSIGN_OR_RETURN(std::string type, GetType(d, "decoder"));
  if (type == "ByteLevel") return Status::Ok();
  if (type == "Sequence") {
    auto it = d.find("decoders");
    MINERU_RETURN_IF_ERROR(
        Expect(it != d.end() && it->is_array(), "decoder Sequence without 'decoders' array"));
    bool any = false;
    for (const json& sub : *it) {
      MINERU_ASSIGN_OR_RETURN(std::string t, GetType(sub, "decoder step"));
      if (t != "ByteLevel") return UnimplementedError("tokenizer.json: decoder '" + t + "' is not supported");
      any = true;
    }
    if (any) return Status::Ok();
  }
  return UnimplementedError("tokenizer.json: decoder '" + type + "' is not supported (only ByteLevel)");
}

Status Tokenizer::Impl::Finish() {
  // Added tokens extend the id tables and take precedence over the vocab for the same id (the
  // last one listed for an id wins).
  int64_t max_id = static_cast<int64_t>(id_flags.size()) - 1;
  for (const AddedToken& a : added) max_id = std::max<int64_t>(max_id, a.id);
  id_flags.resize(static_cast<size_t>(max_id + 1), 0);
  for (size_t i = 0; i < added.size(); ++i) {
    const AddedToken& a = added[i];
    added_by_id[a.id] = i;
    id_flags[a.id] = kPresent | kAdded | (a.special ? kSpecial : 0);
    added_by_content[a.content] = a.id;
  }
  for (size_t i = 0; i < added.size(); ++i) {
    const AddedToken& a = added[i];
    if (!a.normalized) {
      raw_trie.Add(a.content, static_cast<int32_t>(i));
    } else {
      std::string norm;
      bool changed;
      MINERU_RETURN_IF_ERROR(Normalize(a.content, &norm, &changed));
      norm_trie.Add(changed ? std::string_view(norm) : std::string_view(a.content), static_cast<int32_t>(i));
    }
  }
  // Decoded bytes of every id.
  size_t total = 0;
  for (size_t id = 0; id < id_flags.size(); ++id) total += TokenText(static_cast<int32_t>(id)).size();
  token_bytes.clear();
  token_bytes.reserve(total);
  token_bytes_off.assign(id_flags.size() + 1, 0);
  for (size_t id = 0; id < id_flags.size(); ++id) {
    token_bytes_off[id] = static_cast<uint32_t>(token_bytes.size());
    if (id_flags[id] & kPresent) token_bytes += ByteLevelDecodeToken(TokenText(static_cast<int32_t>(id)));
  }
  token_bytes_off[id_flags.size()] = static_cast<uint32_t>(token_bytes.size());
  return Status::Ok();
}

Status Tokenizer::Impl::Normalize(std::string_view in, std::string* out, bool* changed) const {
  *changed = false;
  if (normalizers.empty() || IsAscii(in))
    return Status::Ok();  // every supported form is the identity on ASCII
  std::string cur(in);
  for (int opts : normalizers) {
    utf8proc_uint8_t* dst = nullptr;
    const utf8proc_ssize_t n =
        utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(cur.data()),
                     static_cast<utf8proc_ssize_t>(cur.size()), &dst, static_cast<utf8proc_option_t>(opts));
    if (n < 0) {
      std::free(dst);
      return InvalidArgumentError(std::string("normalization failed: ") + utf8proc_errmsg(n));
    }
    cur.assign(reinterpret_cast<const char*>(dst), static_cast<size_t>(n));
    std::free(dst);
  }
  *changed = true;
  *out = std::move(cur);
  return Status::Ok();
}

Status Tokenizer::Impl::PreTokenize(std::string_view text, std::deque<std::string>* arena,
                                    std::vector<std::string_view>* pieces) const {
  pieces->clear();
  if (text.empty()) return Status::Ok();
  pieces->push_back(text);
  std::vector<std::string_view> next;
  std::vector<std::pair<size_t, size_t>> matches;
  std::vector<Span> spans;
  std::vector<std::pair<size_t, size_t>> kept;
  for (const PreTokStep& step : pretok) {
    if (step.prefix_space) {
      for (std::string_view& p : *pieces) {
        if (p.empty() || p[0] != ' ') {
          arena->emplace_back(" ");
          arena->back().append(p.data(), p.size());
          p = arena->back();
        }
      }
    }
    if (!step.regex) continue;
    next.clear();
    for (std::string_view p : *pieces) {
      matches.clear();
      MINERU_RETURN_IF_ERROR(step.regex->FindAll(p, &matches));
      spans.clear();
      size_t prev = 0;
      for (const auto& m : matches) {
        if (m.first > prev) spans.push_back({prev, m.first, step.invert});
        spans.push_back({m.first, m.second, !step.invert});
        prev = m.second;
      }
      if (prev < p.size()) spans.push_back({prev, p.size(), step.invert});
      kept.clear();
      ApplyBehavior(spans, step.behavior, &kept);
      for (const auto& k : kept)
        if (k.second > k.first) next.push_back(p.substr(k.first, k.second - k.first));
    }
    pieces->swap(next);
  }
  return Status::Ok();
}

void Tokenizer::Impl::BpeWordUncached(std::string_view word, std::vector<int32_t>* out) const {
  if (ignore_merges) {
    const int32_t id = vocab.Find(ByteLevelEncode(word));
    if (id >= 0) {
      out->push_back(id);
      return;
    }
  }
  struct Sym {
    int32_t id;
    int32_t prev;
    int32_t next;
    bool alive;
  };
  std::vector<Sym> syms;
  syms.reserve(word.size());
  for (unsigned char c : word) {
    int32_t id = byte_ids[c];
    if (id < 0) id = unk_id;
    if (id < 0) continue;  // no unk token: the byte is dropped, as HF does
    const int32_t idx = static_cast<int32_t>(syms.size());
    syms.push_back({id, idx - 1, idx + 1, true});
  }
  if (syms.empty()) return;
  syms.back().next = -1;
  if (syms.size() > 1) {
    struct Cand {
      int32_t rank;
      int32_t pos;
      int32_t new_id;
    };
    // Min-heap on (rank, pos): lowest rank first, leftmost on ties.
    auto worse = [](const Cand& x, const Cand& y) {
      return x.rank != y.rank ? x.rank > y.rank : x.pos > y.pos;
    };
    std::vector<Cand> heap;
    heap.reserve(syms.size());
    auto push_pair = [&](int32_t left) {
      const int32_t right = syms[left].next;
      if (right < 0) return;
      const MergeTable::Merge* m = merges.Find(syms[left].id, syms[right].id);
      if (m == nullptr) return;
      heap.push_back({m->rank, left, m->new_id});
      std::push_heap(heap.begin(), heap.end(), worse);
    };
    for (int32_t i = 0; i + 1 < static_cast<int32_t>(syms.size()); ++i) push_pair(i);
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), worse);
      const Cand c = heap.back();
      heap.pop_back();
      Sym& left = syms[c.pos];
      if (!left.alive || left.next < 0) continue;
      const int32_t right_idx = left.next;
      const MergeTable::Merge* m = merges.Find(left.id, syms[right_idx].id);
      if (m == nullptr || m->new_id != c.new_id) continue;  // stale candidate
      left.id = c.new_id;
      Sym& right = syms[right_idx];
      right.alive = false;
      left.next = right.next;
      if (right.next >= 0) syms[right.next].prev = c.pos;
      if (left.prev >= 0) push_pair(left.prev);
      push_pair(c.pos);
    }
  }
  for (int32_t i = 0; i >= 0; i = syms[i].next) out->push_back(syms[i].id);
}

void Tokenizer::Impl::BpeWord(std::string_view word, std::vector<int32_t>* out) const {
  if (word.size() == 1) {
    const int32_t id = byte_ids[static_cast<unsigned char>(word[0])];
    if (id >= 0) {
      out->push_back(id);
    } else if (unk_id >= 0) {
      out->push_back(unk_id);
    }
    return;
  }
  if (word.size() > kCacheMaxWordBytes) {
    BpeWordUncached(word, out);
    return;
  }
  std::string key(word);
  {
    std::shared_lock<std::shared_mutex> lock(cache_mu);
    auto it = cache.find(key);
    if (it != cache.end()) {
      out->insert(out->end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t start = out->size();
  BpeWordUncached(word, out);
  std::unique_lock<std::shared_mutex> lock(cache_mu);
  if (cache.size() < kCacheMaxEntries) {
    cache.emplace(std::move(key),
                  std::vector<int32_t>(out->begin() + static_cast<std::ptrdiff_t>(start), out->end()));
  }
}

Status Tokenizer::Impl::EncodeText(std::string_view text, std::vector<int32_t>* ids) const {
  std::vector<Segment> raw_segs;
  SplitOnAddedTokens(raw_trie, added, text, &raw_segs);
  std::vector<Segment> norm_segs;
  std::deque<std::string> arena;
  std::vector<std::string_view> pieces;
  std::string normalized;
  for (const Segment& seg : raw_segs) {
    if (seg.token >= 0) {
      ids->push_back(added[seg.token].id);
      continue;
    }
    bool changed;
    MINERU_RETURN_IF_ERROR(Normalize(seg.text, &normalized, &changed));
    const std::string_view norm = changed ? std::string_view(normalized) : seg.text;
    norm_segs.clear();
    SplitOnAddedTokens(norm_trie, added, norm, &norm_segs);
    for (const Segment& ns : norm_segs) {
      if (ns.token >= 0) {
        ids->push_back(added[ns.token].id);
        continue;
      }
      arena.clear();
      MINERU_RETURN_IF_ERROR(PreTokenize(ns.text, &arena, &pieces));
      for (std::string_view p : pieces) BpeWord(p, ids);
    }
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::LoadFromFile(const std::string& tokenizer_json_path) {
  auto text = ReadFileToString(tokenizer_json_path);
  if (!text.ok()) return text.status();
  auto tok = LoadFromJson(*text);
  if (!tok.ok()) return tok.status().WithPrefix(tokenizer_json_path);
  return tok;
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::LoadFromJson(std::string_view json_text) {
  json j;
  if (Status s = ParseJson(json_text, {}, &j); !s.ok()) return s.WithPrefix("tokenizer.json");
  if (!j.is_object()) return InvalidArgumentError("tokenizer.json: the top level must be an object");
  return LoadFromJsonObject(j);
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::LoadFromGguf(const std::string& gguf_path) {
  auto f = GgufFile::Open(gguf_path);
  if (!f.ok()) return f.status();
  return LoadFromGguf(**f);
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::LoadFromGguf(const GgufFile& gguf) {
  auto j = GgufTokenizerJson(gguf);
  if (!j.ok()) return j.status().WithPrefix(gguf.path());
  auto tok = LoadFromJsonObject(*j);
  if (!tok.ok()) return tok.status().WithPrefix(gguf.path());
  return tok;
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::LoadFromJsonObject(const nlohmann::json& j) {
  try {
    auto impl = std::make_unique<Impl>();
    auto model_it = j.find("model");
    if (model_it == j.end()) return InvalidArgumentError("tokenizer.json: no 'model'");
    MINERU_RETURN_IF_ERROR(impl->LoadModel(*model_it));
    auto get = [&](const char* key) -> const json& {
      static const json kNull;
      auto it = j.find(key);
      return it == j.end() ? kNull : *it;
    };
    MINERU_RETURN_IF_ERROR(impl->LoadAddedTokens(get("added_tokens")));
    MINERU_RETURN_IF_ERROR(impl->LoadNormalizer(get("normalizer")));
    MINERU_RETURN_IF_ERROR(impl->LoadPreTokenizer(get("pre_tokenizer")));
    MINERU_RETURN_IF_ERROR(impl->LoadDecoder(get("decoder")));
    MINERU_RETURN_IF_ERROR(impl->Finish());
    return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string("tokenizer.json: ") + e.what());
  }
}

StatusOr<std::vector<int32_t>> Tokenizer::Encode(std::string_view text) const {
  const size_t bad = utf8::FindInvalid(text);
  if (bad != std::string_view::npos)
    return InvalidArgumentError("Encode: input is not valid UTF-8 (byte offset " + std::to_string(bad) + ")");
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  try {
    MINERU_RETURN_IF_ERROR(impl_->EncodeText(text, &ids));
  } catch (const std::bad_alloc&) {
    return OutOfMemoryError("encoding " + std::to_string(text.size()) + " bytes of text");
  } catch (const std::exception& e) {
    return InternalError(std::string("Encode: ") + e.what());
  }
  return ids;
}

StatusOr<std::string> Tokenizer::Decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  const int32_t n = vocab_size();
  std::string bytes;
  for (int32_t id : ids) {
    if (id < 0 || id >= n)
      return InvalidArgumentError("Decode: token id " + std::to_string(id) + " out of range [0, " +
                                  std::to_string(n) + ")");
    if (skip_special_tokens && (impl_->id_flags[id] & Impl::kSpecial)) continue;
    bytes += TokenBytes(id);
  }
  std::string out;
  utf8::AppendLossy(bytes, /*final=*/true, &out);
  return out;
}

std::optional<int32_t> Tokenizer::TokenToId(std::string_view token) const {
  const std::string key(token);
  auto a = impl_->added_by_content.find(key);
  if (a != impl_->added_by_content.end()) return a->second;
  const int32_t v = impl_->vocab.Find(token);
  if (v >= 0) return v;
  return std::nullopt;
}

std::string Tokenizer::IdToToken(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return std::string();
  return std::string(impl_->TokenText(id));
}

bool Tokenizer::IsSpecial(int32_t id) const {
  return id >= 0 && id < vocab_size() && (impl_->id_flags[id] & Impl::kSpecial);
}

bool Tokenizer::IsAdded(int32_t id) const {
  return id >= 0 && id < vocab_size() && (impl_->id_flags[id] & Impl::kAdded);
}

int32_t Tokenizer::vocab_size() const { return static_cast<int32_t>(impl_->id_flags.size()); }

std::string_view Tokenizer::TokenBytes(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return std::string_view();
  const uint32_t b = impl_->token_bytes_off[id], e = impl_->token_bytes_off[id + 1];
  return std::string_view(impl_->token_bytes).substr(b, e - b);
}

std::vector<std::pair<int32_t, std::string>> Tokenizer::AddedTokens() const {
  std::vector<std::pair<int32_t, std::string>> out;
  for (const AddedToken& a : impl_->added) out.emplace_back(a.id, a.content);
  std::sort(out.begin(), out.end());
  return out;
}

// ---------------------------------------------------------------------------------------------

std::vector<std::string> Tokenizer::Merges() const {
  auto entries = impl_->merges.Entries();
  std::sort(entries.begin(), entries.end(),
            [](const auto& x, const auto& y) { return x.second.rank < y.second.rank; });
  std::vector<std::string> out;
  out.reserve(entries.size());
  for (const auto& [pair, m] : entries) {
    out.push_back(std::string(impl_->vocab.Text(pair.first)) + " " +
                  std::string(impl_->vocab.Text(pair.second)));
  }
  return out;
}

IncrementalDecoder::IncrementalDecoder(const Tokenizer& tok, bool skip_special_tokens)
    : tok_(tok), skip_special_(skip_special_tokens) {}

std::string IncrementalDecoder::Push(int32_t id) {
  if (id < 0 || id >= tok_.vocab_size()) return std::string();
  if (skip_special_ && tok_.IsSpecial(id)) return std::string();
  pending_ += tok_.TokenBytes(id);
  std::string out;
  const size_t used = utf8::AppendLossy(pending_, /*final=*/false, &out);
  pending_.erase(0, used);
  return out;
}

std::string IncrementalDecoder::Flush() {
  std::string out;
  utf8::AppendLossy(pending_, /*final=*/true, &out);
  pending_.clear();
  return out;
}

}  // namespace mineru
