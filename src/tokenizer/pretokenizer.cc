// tokenizer/pretokenizer.cc — the pre-tokenizer: loading tokenizer.json's pre_tokenizer (ByteLevel
// and Split steps, or a Sequence of them) and cutting normalized text into the pieces the BPE
// encodes one by one, with PCRE2 regexes and HF's split behaviours. Not the normalizer, the BPE
// (tokenizer.cc) nor the added tokens (added_tokens.cc).
#include <string>
#include <utility>
#include <vector>

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>

#include <nlohmann/json.hpp>

#include "base/utf8.h"
#include "tokenizer/tokenizer_internal.h"

namespace mineru {
namespace tokenizer_internal {

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

}  // namespace tokenizer_internal

using tokenizer_internal::Expect;
using tokenizer_internal::GetBool;
using tokenizer_internal::GetType;
using tokenizer_internal::Regex;
using tokenizer_internal::SplitBehavior;

namespace {

// The regex HF's ByteLevel pre-tokenizer uses when use_regex is true (GPT-2's).
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

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

}  // namespace

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

}  // namespace mineru
