// base/mapped_file.h — read-only memory map of a whole file (weights are mapped, never copied).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"

namespace mineru {

class MappedFile {
 public:
  static StatusOr<std::unique_ptr<MappedFile>> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

// Reads a whole (small) file into a string; for configs and JSON.
StatusOr<std::string> ReadFileToString(const std::string& path, size_t max_bytes = size_t(1) << 30);
Status WriteStringToFile(const std::string& path, const std::string& data);
bool FileExists(const std::string& path);

}  // namespace mineru
