// engine/block_pool.h — the paged KV cache's memory: fixed-size blocks of block_size tokens,
// reference counted, with an LRU prefix cache of full blocks keyed by a 128-bit content hash.
//
// Storage is allocated when a block is first handed out and released when the block goes back to
// the free list, so memory follows the live (and cached) tokens, never a maximum length. A block
// whose refcount drops to zero stays in the prefix cache (if it was registered) until evicted.
// Not thread-safe: owned by the engine loop.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "model/decoder.h"

namespace mineru {

struct BlockHash {
  uint64_t lo = 0, hi = 0;
  bool operator==(const BlockHash& o) const { return lo == o.lo && hi == o.hi; }
};
struct BlockHashHasher {
  size_t operator()(const BlockHash& h) const {
    return static_cast<size_t>(h.lo ^ (h.hi * 0x9E3779B97F4A7C15ull));
  }
};

class BlockPool : public KvStore {
 public:
  // Storage per block: all layers' K and V of `type` (kv_dim 0 = bookkeeping only, for tests).
  BlockPool(int num_blocks, int block_size, int num_layers, int kv_dim, KvType type = KvType::kF32);

  int block_size() const override { return block_size_; }
  KvType kv_type() const override { return type_; }
  int num_blocks() const { return num_blocks_; }
  int free_blocks() const;  // allocatable now (free + evictable cached)
  int used_blocks() const { return used_; }
  int cached_blocks() const { return static_cast<int>(lru_.size()); }
  size_t allocated_bytes() const { return allocated_blocks_ * bytes_per_block_; }
  size_t bytes_per_block() const { return bytes_per_block_; }

  // A fresh block (refcount 1), evicting the least recently used cached block if needed. None when
  // every block is in use, or when the block's storage cannot be allocated (out of memory; counted
  // in alloc_failures()): the scheduler then preempts as for a full pool, which frees memory.
  std::optional<int32_t> Allocate();
  void Ref(int32_t block);
  // Drops one reference; at zero the block is cached (if it has a hash) or freed.
  void Release(int32_t block);

  // Prefix cache: a cached or live block holding exactly this content, with a new reference.
  std::optional<int32_t> Lookup(const BlockHash& h);
  // Registers a full block's content hash (first registration wins).
  void Register(int32_t block, const BlockHash& h);

  void* Key(int32_t block, int layer) override;
  void* Value(int32_t block, int layer) override;

  int64_t alloc_failures() const { return alloc_failures_; }
  int64_t hits() const { return hits_; }
  int64_t lookups() const { return lookups_; }

 private:
  struct Block {
    int refs = 0;
    bool has_hash = false;
    BlockHash hash;
    std::unique_ptr<float[]> data;
    std::list<int32_t>::iterator lru_it;
    bool in_lru = false;
  };
  void FreeStorage(int32_t b);

  int num_blocks_, block_size_, kv_dim_;
  KvType type_;
  size_t floats_per_block_, bytes_per_block_;  // storage in floats' room (fp16 pairs share one)
  std::vector<Block> blocks_;
  std::vector<int32_t> free_;
  std::list<int32_t> lru_;  // cached blocks with refs == 0, least recent first
  std::unordered_map<BlockHash, int32_t, BlockHashHasher> by_hash_;
  int used_ = 0;
  size_t allocated_blocks_ = 0;
  int64_t hits_ = 0, lookups_ = 0;
  int64_t alloc_failures_ = 0;
};

}  // namespace mineru
