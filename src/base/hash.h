// base/hash.h — digests: SHA-256 and MD5 (MinerU names its image crops with them; downloads are
// verified with SHA-256) and a 128-bit fast hash for cache keys.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace mineru {

class Sha256 {
 public:
  Sha256();
  void Update(const void* data, size_t n);
  std::string HexDigest();  // finalises; the object must not be updated afterwards

 private:
  void Block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

std::string Sha256Hex(std::string_view data);
std::string Md5Hex(const void* data, size_t n);

}  // namespace mineru
