#include "engine/image_cache.h"

#include <xxhash.h>

#include <cstring>

namespace mineru {

BlockHash HashImage(const RgbImage& image, const ImageProcessorConfig& c) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_128bits_reset(st);
  const int32_t dims[2] = {image.width, image.height};
  XXH3_128bits_update(st, dims, sizeof(dims));
  XXH3_128bits_update(st, image.pixels.data(), image.pixels.size());
  const int64_t params[5] = {c.min_pixels, c.max_pixels, c.patch_size, c.merge_size, c.temporal_patch_size};
  XXH3_128bits_update(st, params, sizeof(params));
  XXH3_128bits_update(st, c.image_mean, sizeof(c.image_mean));
  XXH3_128bits_update(st, c.image_std, sizeof(c.image_std));
  XXH3_128bits_update(st, &c.rescale_factor, sizeof(c.rescale_factor));
  XXH128_hash_t h = XXH3_128bits_digest(st);
  XXH3_freeState(st);
  return {h.low64, h.high64};
}

std::shared_ptr<const CachedImage> ImageCache::Get(const BlockHash& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(key);
  if (it == map_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  lru_.splice(lru_.end(), lru_, it->second.lru);
  return it->second.value;
}

void ImageCache::Put(const BlockHash& key, std::shared_ptr<const CachedImage> value) {
  const size_t b = value->embeddings.size() * sizeof(float) + sizeof(CachedImage);
  std::lock_guard<std::mutex> lock(mu_);
  if (b > max_bytes_ || map_.count(key)) return;
  while (bytes_ + b > max_bytes_ && !lru_.empty()) {
    auto it = map_.find(lru_.front());
    bytes_ -= it->second.bytes;
    map_.erase(it);
    lru_.pop_front();
  }
  lru_.push_back(key);
  map_[key] = Entry{std::move(value), std::prev(lru_.end()), b};
  bytes_ += b;
}

size_t ImageCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

}  // namespace mineru
