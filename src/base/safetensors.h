// base/safetensors.h — memory-mapped reader for the safetensors format.
//
// Layout: 8-byte little-endian header length N, N bytes of JSON
// {name: {dtype, shape, data_offsets:[begin,end]}, "__metadata__": {...}}, then the data.
// Open() validates everything a hostile file could lie about (header length, JSON, dtypes,
// shapes vs byte ranges, ranges inside the file, overlaps) before handing out pointers.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/dtype.h"
#include "base/mapped_file.h"
#include "base/status.h"

namespace mineru {

struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;  // points into the mapped file
  size_t nbytes = 0;

  int64_t numel() const;
  std::string ShapeString() const;  // "[2, 3]"
};

class SafetensorsFile {
 public:
  static StatusOr<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);

  const TensorInfo* Find(std::string_view name) const;
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::string& path() const { return file_->path(); }
  // The mapping the tensors point into (corrupted() / CheckUnchanged(): see base/mapped_file.h).
  const MappedFile& file() const { return *file_; }

 private:
  std::unique_ptr<MappedFile> file_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

// Converts any float/int dtype to f32 (bf16/f16 widened exactly).
StatusOr<std::vector<float>> ReadAsF32(const TensorInfo& t);
// Integer dtypes to i64.
StatusOr<std::vector<int64_t>> ReadAsI64(const TensorInfo& t);

// Writes tensors (name, dtype, shape, bytes) as a safetensors file. Used by gen-model and tests.
struct TensorToWrite {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};
Status WriteSafetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                        const std::map<std::string, std::string>& metadata = {});

}  // namespace mineru
