#include "tokenizer/token_tables.h"

#include <algorithm>
#include <functional>

namespace mineru {
namespace {

// Slots for n keys: a power of two at least 4n/3 (load factor <= 3/4), at least 16.
size_t SlotsFor(size_t n) {
  size_t cap = 16;
  while (cap * 3 < n * 4) cap *= 2;
  return cap;
}

}  // namespace

void VocabTable::Build(const std::vector<std::pair<std::string_view, int32_t>>& entries) {
  text_.clear();
  entry_off_.assign(1, 0);
  entry_id_.clear();
  id_entry_.clear();
  slots_.assign(SlotsFor(entries.size()), -1);
  size_t total = 0;
  for (const auto& e : entries) total += e.first.size();
  text_.reserve(total);
  entry_off_.reserve(entries.size() + 1);
  entry_id_.reserve(entries.size());
  for (const auto& [text, id] : entries) {
    const size_t s = Slot(text);
    if (slots_[s] >= 0) {  // the same text again: it takes the later id (as a map insert would)
      entry_id_[slots_[s]] = id;
      continue;
    }
    slots_[s] = static_cast<int32_t>(entry_id_.size());
    text_.append(text);
    entry_off_.push_back(static_cast<uint32_t>(text_.size()));
    entry_id_.push_back(id);
  }
  int32_t limit = 0;
  for (int32_t id : entry_id_) limit = std::max(limit, id + 1);
  id_entry_.assign(static_cast<size_t>(limit), -1);
  // Entries are in first-seen order; an id named by several texts keeps the last of them.
  for (size_t e = 0; e < entry_id_.size(); ++e) id_entry_[entry_id_[e]] = static_cast<int32_t>(e);
  text_.shrink_to_fit();
}

size_t VocabTable::Slot(std::string_view text) const {
  const size_t mask = slots_.size() - 1;
  for (size_t s = std::hash<std::string_view>{}(text)&mask;; s = (s + 1) & mask) {
    if (slots_[s] < 0 || EntryText(slots_[s]) == text) return s;
  }
}

int32_t VocabTable::Find(std::string_view text) const {
  if (slots_.empty()) return -1;
  const int32_t e = slots_[Slot(text)];
  return e < 0 ? -1 : entry_id_[e];
}

std::string_view VocabTable::Text(int32_t id) const {
  return Has(id) ? EntryText(id_entry_[id]) : std::string_view();
}

void MergeTable::Reserve(size_t n) {
  if (SlotsFor(n) > slots_.size()) Rehash(SlotsFor(n));
}

size_t MergeTable::Index(uint64_t key) const {
  const size_t mask = slots_.size() - 1;
  // Fibonacci hashing: the top bits of key times 2^64 / phi depend on every bit of both ids.
  for (size_t s = static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);; s = (s + 1) & mask) {
    if (slots_[s].key == kEmpty || slots_[s].key == key) return s;
  }
}

void MergeTable::Rehash(size_t capacity) {
  std::vector<SlotEntry> old = std::move(slots_);
  slots_.assign(capacity, SlotEntry{kEmpty, Merge{0, 0}});
  shift_ = 64;
  for (size_t c = capacity; c > 1; c /= 2) --shift_;
  for (const SlotEntry& e : old) {
    if (e.key != kEmpty) slots_[Index(e.key)] = e;
  }
}

void MergeTable::Put(int32_t a, int32_t b, Merge m) {
  if (SlotsFor(size_ + 1) > slots_.size()) Rehash(SlotsFor(size_ + 1) * 2);
  const uint64_t key = Key(a, b);
  SlotEntry& e = slots_[Index(key)];
  if (e.key == kEmpty) ++size_;
  e = SlotEntry{key, m};
}

const MergeTable::Merge* MergeTable::Find(int32_t a, int32_t b) const {
  if (slots_.empty()) return nullptr;
  const SlotEntry& e = slots_[Index(Key(a, b))];
  return e.key == kEmpty ? nullptr : &e.m;
}

std::vector<std::pair<std::pair<int32_t, int32_t>, MergeTable::Merge>> MergeTable::Entries() const {
  std::vector<std::pair<std::pair<int32_t, int32_t>, Merge>> out;
  out.reserve(size_);
  for (const SlotEntry& e : slots_) {
    if (e.key != kEmpty)
      out.push_back({{static_cast<int32_t>(e.key >> 32), static_cast<int32_t>(e.key & 0xffffffffu)}, e.m});
  }
  return out;
}

}  // namespace mineru
