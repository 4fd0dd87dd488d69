// base/gguf.h — memory-mapped reader for llama.cpp's GGUF format (versions 2 and 3).
//
// Layout (all little-endian): "GGUF", u32 version, u64 tensor_count, u64 kv_count; kv_count
// key/value pairs (string key, u32 value type, value); tensor_count tensor infos (string name,
// u32 n_dims <= 4, u64 ne[n_dims] with ne[0] the innermost (fastest) dimension, u32 ggml type,
// u64 offset); padding to general.alignment (default 32); then the data section, each tensor at
// data_start + offset. Strings are u64 length + bytes (no terminator).
//
// Every byte is untrusted: Open() checks counts against the bytes left, string and array lengths,
// types, dimensions (overflow), block divisibility, alignment, that every tensor lies inside the
// file and that no two overlap, before anything is handed out. Anything malformed is one
// InvalidArgument error naming the file and what is wrong. Tensor types the engine does not
// compute with are still described (type name) so callers can refuse them by name.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/mapped_file.h"
#include "base/status.h"

namespace mineru {

// ggml tensor types (ggml.h numbering) that this reader knows the block geometry of.
enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kBF16 = 30,
};

// "F32", "Q8_0", …; "type N" for a number this reader does not know.
std::string GgmlTypeName(uint32_t type);

// GGUF metadata value types.
enum class GgufValueType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};

// One metadata value. Scalars are widened (integers to int64/uint64 as read, floats to double);
// strings and string arrays point into the mapping (valid while the GgufFile lives).
struct GgufValue {
  GgufValueType type = GgufValueType::kU8;
  GgufValueType elem_type = GgufValueType::kU8;  // arrays only
  int64_t i = 0;                                 // integer and bool scalars (u64 above INT64_MAX refused)
  double f = 0;                                  // float scalars
  std::string_view str;                          // kString
  std::vector<int64_t> ints;                     // arrays of integers / bools
  std::vector<double> floats;                    // arrays of floats
  std::vector<std::string_view> strings;         // arrays of strings

  bool is_integer() const;  // any integer type (not bool)
  bool is_float() const { return type == GgufValueType::kF32 || type == GgufValueType::kF64; }
  size_t array_size() const { return ints.size() + floats.size() + strings.size(); }
};

struct GgufTensor {
  std::string name;
  uint32_t type = 0;        // GgmlType value (maybe one this reader does not know)
  std::vector<int64_t> ne;  // ggml order: ne[0] innermost. Torch shape is ne reversed.
  const uint8_t* data = nullptr;
  size_t nbytes = 0;

  // Rows/cols of the tensor as a matrix: cols = ne[0], rows = product of the rest.
  int64_t cols() const { return ne.empty() ? 1 : ne[0]; }
  int64_t rows() const;
  std::string ShapeString() const;  // "{ne0, ne1, …}" as llama.cpp prints it
};

class GgufFile {
 public:
  static StatusOr<std::unique_ptr<GgufFile>> Open(const std::string& path);

  uint32_t version() const { return version_; }
  const std::string& path() const { return file_->path(); }
  const MappedFile& file() const { return *file_; }
  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* FindTensor(std::string_view name) const;
  const GgufValue* Find(std::string_view key) const;

  // Typed lookups: NotFound if absent, InvalidArgument (naming the key) if of another type.
  StatusOr<int64_t> GetInt(std::string_view key) const;
  StatusOr<double> GetFloat(std::string_view key) const;  // integers accepted too
  StatusOr<std::string> GetString(std::string_view key) const;
  StatusOr<bool> GetBool(std::string_view key) const;
  // Optional forms: the default when absent, an error only when present with the wrong type.
  StatusOr<int64_t> GetInt(std::string_view key, int64_t dflt) const;
  StatusOr<double> GetFloat(std::string_view key, double dflt) const;
  StatusOr<std::string> GetString(std::string_view key, const std::string& dflt) const;

 private:
  GgufFile() = default;
  friend class GgufParser;
  std::unique_ptr<MappedFile> file_;
  uint32_t version_ = 0;
  std::map<std::string, GgufValue, std::less<>> kv_;
  std::vector<GgufTensor> tensors_;
  std::unordered_map<std::string, size_t> index_;
};

// True when the file at path starts with the GGUF magic (cheap: reads 4 bytes).
bool LooksLikeGguf(const std::string& path);

// True when f declares that it carries no vocabulary: tokenizer.ggml.model is the string "none"
// (what llama.cpp's converter writes for a vocabulary-less model) or "no_vocab" (gguf-py's
// NoVocab); llama.cpp loads both as LLAMA_VOCAB_TYPE_NONE. False when the key is absent or names
// a tokenizer, whose arrays must then be present.
bool GgufHasNoVocabulary(const GgufFile& f);

}  // namespace mineru
