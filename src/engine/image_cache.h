// engine/image_cache.h — vision-encoder outputs keyed by a 128-bit hash of the decoded pixels and
// the preprocessing parameters, bounded by bytes with LRU eviction. Thread-safe.
//
// The key covers every pixel, the size and the processor settings, so two images that differ in
// one pixel (or are preprocessed differently) never share an entry.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "engine/block_pool.h"
#include "image/image.h"
#include "model/config.h"
#include "model/vision_encoder.h"

namespace mineru {

struct CachedImage {
  ImageGrid grid;
  std::vector<float> embeddings;  // [tokens, hidden]
};

// Hash of an image's pixels and size plus the processor configuration.
BlockHash HashImage(const RgbImage& image, const ImageProcessorConfig& config);

class ImageCache {
 public:
  explicit ImageCache(size_t max_bytes) : max_bytes_(max_bytes) {}
  std::shared_ptr<const CachedImage> Get(const BlockHash& key);
  void Put(const BlockHash& key, std::shared_ptr<const CachedImage> value);
  size_t bytes() const;
  int64_t hits() const { return hits_; }
  int64_t misses() const { return misses_; }

 private:
  struct Entry {
    std::shared_ptr<const CachedImage> value;
    std::list<BlockHash>::iterator lru;
    size_t bytes;
  };
  mutable std::mutex mu_;
  size_t max_bytes_, bytes_ = 0;
  std::list<BlockHash> lru_;  // most recent at the back
  std::unordered_map<BlockHash, Entry, BlockHashHasher> map_;
  int64_t hits_ = 0, misses_ = 0;
};

}  // namespace mineru
