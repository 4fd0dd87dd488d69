#include "engine/block_pool.h"

#include "base/check.h"

#include <new>

namespace mineru {

BlockPool::BlockPool(int num_blocks, int block_size, int num_layers, int kv_dim, KvType type)
    : num_blocks_(num_blocks), block_size_(block_size), kv_dim_(kv_dim), type_(type) {
  const size_t bytes = static_cast<size_t>(num_layers) * 2 * block_size * kv_dim * KvTypeBytes(type);
  floats_per_block_ = (bytes + sizeof(float) - 1) / sizeof(float);
  bytes_per_block_ = floats_per_block_ * sizeof(float);
  blocks_.resize(static_cast<size_t>(num_blocks));
  free_.reserve(static_cast<size_t>(num_blocks));
  for (int i = num_blocks - 1; i >= 0; --i) free_.push_back(i);
}

int BlockPool::free_blocks() const { return static_cast<int>(free_.size() + lru_.size()); }

void BlockPool::FreeStorage(int32_t b) {
  if (blocks_[b].data) {
    blocks_[b].data.reset();
    --allocated_blocks_;
  }
}

std::optional<int32_t> BlockPool::Allocate() {
  int32_t b;
  bool use_free = !free_.empty();
  if (use_free && !blocks_[free_.back()].data && floats_per_block_ > 0) {
    // Storage first, so a failure leaves the pool as it was; then a cached block's storage is
    // reused if there is one.
    std::unique_ptr<float[]> data(new (std::nothrow) float[floats_per_block_]);
    if (data) {
      blocks_[free_.back()].data = std::move(data);
      ++allocated_blocks_;
    } else {
      ++alloc_failures_;
      use_free = false;
    }
  }
  if (use_free) {
    b = free_.back();
    free_.pop_back();
  } else if (!lru_.empty()) {
    b = lru_.front();  // evict the least recently used cached block
    lru_.pop_front();
    Block& e = blocks_[b];
    e.in_lru = false;
    if (e.has_hash) {
      auto it = by_hash_.find(e.hash);
      if (it != by_hash_.end() && it->second == b) by_hash_.erase(it);
      e.has_hash = false;
    }
  } else {
    return std::nullopt;
  }
  Block& blk = blocks_[b];
  blk.refs = 1;
  blk.has_hash = false;
  ++used_;
  return b;
}

void BlockPool::Ref(int32_t b) {
  Block& blk = blocks_[b];
  if (blk.refs == 0) {
    MINERU_CHECK(blk.in_lru);
    lru_.erase(blk.lru_it);
    blk.in_lru = false;
    ++used_;
  }
  ++blk.refs;
}

void BlockPool::Release(int32_t b) {
  Block& blk = blocks_[b];
  MINERU_CHECK(blk.refs > 0);
  if (--blk.refs > 0) return;
  --used_;
  if (blk.has_hash) {
    lru_.push_back(b);
    blk.lru_it = std::prev(lru_.end());
    blk.in_lru = true;
  } else {
    FreeStorage(b);
    free_.push_back(b);
  }
}

std::optional<int32_t> BlockPool::Lookup(const BlockHash& h) {
  ++lookups_;
  auto it = by_hash_.find(h);
  if (it == by_hash_.end()) return std::nullopt;
  ++hits_;
  Ref(it->second);
  return it->second;
}

void BlockPool::Register(int32_t b, const BlockHash& h) {
  Block& blk = blocks_[b];
  if (blk.has_hash) return;
  if (by_hash_.count(h)) return;  // an identical block is already cached
  blk.has_hash = true;
  blk.hash = h;
  by_hash_[h] = b;
}

void* BlockPool::Key(int32_t b, int layer) {
  const size_t elems = static_cast<size_t>(layer) * 2 * block_size_ * kv_dim_;
  return reinterpret_cast<char*>(blocks_[b].data.get()) + elems * KvTypeBytes(type_);
}

void* BlockPool::Value(int32_t b, int layer) {
  const size_t elems = (static_cast<size_t>(layer) * 2 + 1) * block_size_ * kv_dim_;
  return reinterpret_cast<char*>(blocks_[b].data.get()) + elems * KvTypeBytes(type_);
}

}  // namespace mineru
