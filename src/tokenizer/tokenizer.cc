// tokenizer/tokenizer.cc — the Tokenizer at work: encoding (added tokens -> normalizer ->
// pre-tokenizer -> byte-level BPE, with a per-word cache) and decoding (ByteLevel decoder + lossy
// UTF-8), its accessors, and IncrementalDecoder. Loading is tokenizer_load.cc's; the pre-tokenizer,
// the added tokens and the byte alphabet have files of their own (see tokenizer_internal.h).
#include "tokenizer/tokenizer.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <exception>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <utility>

#include "base/utf8.h"
#include "tokenizer/tokenizer_internal.h"

namespace mineru {

using tokenizer_internal::AddedToken;
using tokenizer_internal::ByteLevelEncode;
using tokenizer_internal::kCacheMaxEntries;
using tokenizer_internal::kCacheMaxWordBytes;
using tokenizer_internal::Segment;
using tokenizer_internal::SplitOnAddedTokens;

namespace {

bool IsAscii(std::string_view s) {
  for (unsigned char c : s)
    if (c & 0x80) return false;
  return true;
}

}  // namespace

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
