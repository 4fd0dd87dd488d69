// base/gguf_writer.h — writes a GGUF v3 file (layout: base/gguf.h) from metadata and tensors
// whose bytes already exist in memory (mapped weights, owned buffers). Used by `quantize
// --format gguf` to write llama.cpp's layout, and by tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/gguf.h"
#include "base/status.h"

namespace mineru {

class GgufWriter {
 public:
  void AddString(const std::string& key, const std::string& v);
  void AddU32(const std::string& key, uint32_t v);
  void AddI32(const std::string& key, int32_t v);
  void AddF32(const std::string& key, float v);
  void AddBool(const std::string& key, bool v);
  void AddI32Array(const std::string& key, const std::vector<int32_t>& v);
  void AddF32Array(const std::string& key, const std::vector<float>& v);
  void AddStringArray(const std::string& key, const std::vector<std::string>& v);

  // A tensor of ggml `type` with ggml dims ne (ne[0] innermost) whose nbytes bytes stay valid
  // until Write returns. `owned`, when non-empty, is kept by the writer and used instead of data.
  void AddTensor(const std::string& name, GgmlType type, std::vector<int64_t> ne, const void* data,
                 size_t nbytes);
  void AddOwnedTensor(const std::string& name, GgmlType type, std::vector<int64_t> ne, std::string bytes);

  // Writes the file (alignment 32), checking every write; a partial file is removed on error.
  Status Write(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> ne;
    const void* data;
    size_t nbytes;
    std::string owned;
  };
  void Key(const std::string& key, GgufValueType t);
  std::string kv_;
  uint64_t n_kv_ = 0;
  std::vector<Tensor> tensors_;
};

}  // namespace mineru
