// tokenizer/added_tokens.cc — the added tokens: loading tokenizer.json's added_tokens, the byte trie
// they are matched with (leftmost-longest), and splitting text into added tokens and the pieces
// between them with HF's lstrip / rstrip / single_word rules. Not the BPE of the pieces
// (tokenizer.cc) nor the id tables the added tokens join (tokenizer_load.cc's Finish).
#include <string>
#include <utility>
#include <vector>

#include <utf8proc.h>

#include <nlohmann/json.hpp>

#include "base/utf8.h"
#include "tokenizer/tokenizer_internal.h"

namespace mineru {
namespace tokenizer_internal {

void TokenTrie::Add(std::string_view s, int32_t value) {
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

bool TokenTrie::Find(std::string_view text, size_t pos, size_t* start, size_t* end, int32_t* value) const {
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

namespace {

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

}  // namespace

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

}  // namespace tokenizer_internal

using tokenizer_internal::Expect;
using tokenizer_internal::GetBool;
using tokenizer_internal::kMaxTokenId;

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

}  // namespace mineru
