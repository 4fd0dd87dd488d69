// tokenizer/token_tables.h — the byte-level BPE model's two lookup tables in flat arrays.
//
// A 151k-token vocabulary and its 151k merges held in node-based hash maps took ~25 MB of small
// allocations (a node, a string and a bucket per token, a node per merge); these tables hold the
// same in ~8 MB: the token texts in one buffer and open-addressing slots of 32-bit entry numbers
// and of 16-byte merges. Both are built once at load and then only read (safe to share across
// threads).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mineru {

// Token text <-> id. Texts are unique (a later entry for the same text replaces the earlier
// one's id, as a map's insert_or_assign does); several texts may share an id, and then the last
// of them in entry order is the id's text (Text), while Find still finds each of them.
class VocabTable {
 public:
  // entries: (text, id) in order, ids >= 0, their texts under 4 GiB in all (the caller checks).
  // Replaces what the table held.
  void Build(const std::vector<std::pair<std::string_view, int32_t>>& entries);
  // The id of `text`, or -1.
  int32_t Find(std::string_view text) const;
  // The text of `id`; empty for ids no entry has (holes) and ids out of range.
  std::string_view Text(int32_t id) const;
  bool Has(int32_t id) const {
    return id >= 0 && static_cast<size_t>(id) < id_entry_.size() && id_entry_[id] >= 0;
  }
  // One past the largest id (0 when empty).
  int32_t id_limit() const { return static_cast<int32_t>(id_entry_.size()); }
  size_t size() const { return entry_id_.size(); }

 private:
  std::string_view EntryText(int32_t e) const {
    return std::string_view(text_).substr(entry_off_[e], entry_off_[e + 1] - entry_off_[e]);
  }
  size_t Slot(std::string_view text) const;  // the slot of text, or of the empty slot it would take

  std::string text_;                 // every entry's text, concatenated
  std::vector<uint32_t> entry_off_;  // [entries + 1] where each entry's text starts
  std::vector<int32_t> entry_id_;    // [entries]
  std::vector<int32_t> id_entry_;    // [id_limit] the entry naming each id, -1 for a hole
  std::vector<int32_t> slots_;       // power-of-two open addressing of entry numbers, -1 empty
};

// (left id, right id) -> (rank, merged id), for ids below 2^31.
class MergeTable {
 public:
  struct Merge {
    int32_t rank;
    int32_t new_id;
  };
  // Sizes the slots for n merges (optional: Put grows them as needed).
  void Reserve(size_t n);
  // Sets the merge of (a, b), replacing an earlier one (later duplicates win, as in HF).
  void Put(int32_t a, int32_t b, Merge m);
  // The merge of (a, b), or null.
  const Merge* Find(int32_t a, int32_t b) const;
  size_t size() const { return size_; }
  // Every merge as ((a, b), merge), in no particular order.
  std::vector<std::pair<std::pair<int32_t, int32_t>, Merge>> Entries() const;

 private:
  struct SlotEntry {
    uint64_t key;  // (a << 32) | b; kEmpty for a free slot
    Merge m;
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};  // never a key: ids are below 2^31
  static uint64_t Key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  size_t Index(uint64_t key) const;  // the slot of key, or of the empty slot it would take
  void Rehash(size_t capacity);

  std::vector<SlotEntry> slots_;  // power-of-two open addressing (linear probing)
  int shift_ = 64;                // 64 - log2(slots): a key's home slot is its hash's top bits
  size_t size_ = 0;
};

}  // namespace mineru
