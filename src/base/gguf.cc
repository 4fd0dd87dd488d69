#include "base/gguf.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>

namespace mineru {
namespace {

constexpr uint64_t kMaxDims = 4;
constexpr uint64_t kMaxStringBytes = uint64_t{1} << 24;  // a key, name or string value: 16 MiB
constexpr uint64_t kMaxAlignment = uint64_t{1} << 16;

struct TypeGeometry {
  uint32_t block;  // values per block
  uint32_t bytes;  // bytes per block
};

// Block geometry of the ggml types this reader knows (ggml.c type_traits); {0, 0} otherwise.
TypeGeometry Geometry(uint32_t t) {
  switch (static_cast<GgmlType>(t)) {
    case GgmlType::kF32:
      return {1, 4};
    case GgmlType::kF16:
      return {1, 2};
    case GgmlType::kBF16:
      return {1, 2};
    case GgmlType::kQ4_0:
      return {32, 18};
    case GgmlType::kQ4_1:
      return {32, 20};
    case GgmlType::kQ5_0:
      return {32, 22};
    case GgmlType::kQ5_1:
      return {32, 24};
    case GgmlType::kQ8_0:
      return {32, 34};
    case GgmlType::kQ8_1:
      return {32, 36};
    case GgmlType::kQ2_K:
      return {256, 84};
    case GgmlType::kQ3_K:
      return {256, 110};
    case GgmlType::kQ4_K:
      return {256, 144};
    case GgmlType::kQ5_K:
      return {256, 176};
    case GgmlType::kQ6_K:
      return {256, 210};
    case GgmlType::kQ8_K:
      return {256, 292};
    case GgmlType::kI8:
      return {1, 1};
    case GgmlType::kI16:
      return {1, 2};
    case GgmlType::kI32:
      return {1, 4};
    case GgmlType::kI64:
      return {1, 8};
    case GgmlType::kF64:
      return {1, 8};
  }
  return {0, 0};
}

size_t ScalarSize(GgufValueType t) {
  switch (t) {
    case GgufValueType::kU8:
    case GgufValueType::kI8:
    case GgufValueType::kBool:
      return 1;
    case GgufValueType::kU16:
    case GgufValueType::kI16:
      return 2;
    case GgufValueType::kU32:
    case GgufValueType::kI32:
    case GgufValueType::kF32:
      return 4;
    case GgufValueType::kU64:
    case GgufValueType::kI64:
    case GgufValueType::kF64:
      return 8;
    case GgufValueType::kString:
      return 8;  // at least its length field
    case GgufValueType::kArray:
      return 12;  // at least elem type + count
  }
  return 0;
}

bool MulOverflows(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_mul_overflow(a, b, out); }

}  // namespace

std::string GgmlTypeName(uint32_t type) {
  switch (static_cast<GgmlType>(type)) {
    case GgmlType::kF32:
      return "F32";
    case GgmlType::kF16:
      return "F16";
    case GgmlType::kBF16:
      return "BF16";
    case GgmlType::kQ4_0:
      return "Q4_0";
    case GgmlType::kQ4_1:
      return "Q4_1";
    case GgmlType::kQ5_0:
      return "Q5_0";
    case GgmlType::kQ5_1:
      return "Q5_1";
    case GgmlType::kQ8_0:
      return "Q8_0";
    case GgmlType::kQ8_1:
      return "Q8_1";
    case GgmlType::kQ2_K:
      return "Q2_K";
    case GgmlType::kQ3_K:
      return "Q3_K";
    case GgmlType::kQ4_K:
      return "Q4_K";
    case GgmlType::kQ5_K:
      return "Q5_K";
    case GgmlType::kQ6_K:
      return "Q6_K";
    case GgmlType::kQ8_K:
      return "Q8_K";
    case GgmlType::kI8:
      return "I8";
    case GgmlType::kI16:
      return "I16";
    case GgmlType::kI32:
      return "I32";
    case GgmlType::kI64:
      return "I64";
    case GgmlType::kF64:
      return "F64";
  }
  return "type " + std::to_string(type);
}

bool GgufValue::is_integer() const {
  switch (type) {
    case GgufValueType::kU8:
    case GgufValueType::kI8:
    case GgufValueType::kU16:
    case GgufValueType::kI16:
    case GgufValueType::kU32:
    case GgufValueType::kI32:
    case GgufValueType::kU64:
    case GgufValueType::kI64:
      return true;
    default:
      return false;
  }
}

int64_t GgufTensor::rows() const {
  int64_t r = 1;
  for (size_t i = 1; i < ne.size(); ++i) r *= ne[i];  // checked against overflow at Open
  return r;
}

std::string GgufTensor::ShapeString() const {
  std::string s = "{";
  for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "}";
}

// Reads the header with a bounds-checked cursor. Every Read* fails (sets err_) rather than read
// past the end; callers check ok() after each step that decides how much to read next.
class GgufParser {
 public:
  GgufParser(const uint8_t* p, size_t n) : p_(p), n_(n) {}

  Status Parse(GgufFile* f);

 private:
  size_t left() const { return n_ - pos_; }
  bool Fail(std::string what) {
    if (err_.empty()) err_ = std::move(what);
    return false;
  }
  template <typename T>
  bool Read(T* out, const char* what) {
    if (left() < sizeof(T)) return Fail(std::string("truncated at ") + what);
    std::memcpy(out, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool ReadString(std::string_view* out, const char* what) {
    uint64_t len = 0;
    if (!Read(&len, what)) return false;
    if (len > left())
      return Fail(std::string(what) + " of " + std::to_string(len) + " bytes runs past the end");
    if (len > kMaxStringBytes)
      return Fail(std::string(what) + " is too long (" + std::to_string(len) + " bytes)");
    *out = std::string_view(reinterpret_cast<const char*>(p_ + pos_), len);
    pos_ += len;
    return true;
  }
  bool ReadScalar(GgufValueType t, GgufValue* v, const std::string& key);
  bool ReadArray(GgufValue* v, const std::string& key);
  bool ReadValue(GgufValue* v, const std::string& key);
  bool ReadTensorInfo(GgufTensor* t, uint64_t* offset);
  Status PlaceTensors(GgufFile* f, const std::vector<uint64_t>& offsets);

  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
  std::string err_;
};

bool GgufParser::ReadScalar(GgufValueType t, GgufValue* v, const std::string& key) {
  switch (t) {
    case GgufValueType::kU8: {
      uint8_t x;
      if (!Read(&x, "a value")) return false;
      v->i = x;
      return true;
    }
    case GgufValueType::kI8: {
      int8_t x;
      if (!Read(&x, "a value")) return false;
      v->i = x;
      return true;
    }
    case GgufValueType::kU16: {
      uint16_t x;
      if (!Read(&x, "a value")) return false;
      v->i = x;
      return true;
    }
    case GgufValueType::kI16: {
      int16_t x;
      if (!Read(&x, "a value")) return false;
      v->i = x;
      return true;
    }
    case GgufValueType::kU32: {
      uint32_t x;
      if (!Read(&x, "a value")) return false;
      v->i = x;
      return true;
    }
    case GgufValueType::kI32: {
      int32_t x;
      if (!Read(&x, "a value")) return false;
      v->i = x;
      return true;
    }
    case GgufValueType::kI64: {
      int64_t x;
      if (!Read(&x, "a value")) return false;
      v->i = x;
      return true;
    }
    case GgufValueType::kU64: {
      uint64_t x;
      if (!Read(&x, "a value")) return false;
      if (x > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return Fail("'" + key + "' is out of range");
      v->i = static_cast<int64_t>(x);
      return true;
    }
    case GgufValueType::kBool: {
      uint8_t x;
      if (!Read(&x, "a value")) return false;
      if (x > 1) return Fail("'" + key + "' is not a valid bool");
      v->i = x;
      return true;
    }
    case GgufValueType::kF32: {
      float x;
      if (!Read(&x, "a value")) return false;
      v->f = x;
      return true;
    }
    case GgufValueType::kF64: {
      double x;
      if (!Read(&x, "a value")) return false;
      v->f = x;
      return true;
    }
    case GgufValueType::kString:
      return ReadString(&v->str, "a string value");
    case GgufValueType::kArray:
      return Fail("'" + key + "': nested arrays are not supported");
  }
  return Fail("'" + key + "' has unknown value type " + std::to_string(static_cast<uint32_t>(t)));
}

bool GgufParser::ReadArray(GgufValue* v, const std::string& key) {
  uint32_t et = 0;
  uint64_t count = 0;
  if (!Read(&et, "an array type") || !Read(&count, "an array length")) return false;
  v->elem_type = static_cast<GgufValueType>(et);
  const size_t min_size = ScalarSize(v->elem_type);
  if (min_size == 0) return Fail("'" + key + "' has unknown element type " + std::to_string(et));
  if (v->elem_type == GgufValueType::kArray) return Fail("'" + key + "': nested arrays are not supported");
  if (count > left() / min_size)
    return Fail("'" + key + "': array of " + std::to_string(count) + " runs past the end");
  GgufValue elem;
  for (uint64_t i = 0; i < count; ++i) {
    if (!ReadScalar(v->elem_type, &elem, key)) return false;
    if (v->elem_type == GgufValueType::kString) {
      v->strings.push_back(elem.str);
    } else if (v->elem_type == GgufValueType::kF32 || v->elem_type == GgufValueType::kF64) {
      v->floats.push_back(elem.f);
    } else {
      v->ints.push_back(elem.i);
    }
  }
  return true;
}

bool GgufParser::ReadValue(GgufValue* v, const std::string& key) {
  uint32_t t = 0;
  if (!Read(&t, "a value type")) return false;
  v->type = static_cast<GgufValueType>(t);
  if (ScalarSize(v->type) == 0) return Fail("'" + key + "' has unknown value type " + std::to_string(t));
  if (v->type == GgufValueType::kArray) return ReadArray(v, key);
  return ReadScalar(v->type, v, key);
}

bool GgufParser::ReadTensorInfo(GgufTensor* t, uint64_t* offset) {
  std::string_view name;
  uint32_t n_dims = 0;
  if (!ReadString(&name, "a tensor name") || !Read(&n_dims, "a tensor's dimension count")) return false;
  t->name = std::string(name);
  if (n_dims == 0 || n_dims > kMaxDims) {
    return Fail("tensor '" + t->name + "' has " + std::to_string(n_dims) + " dimensions (1 to 4 allowed)");
  }
  uint64_t numel = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    uint64_t ne = 0;
    if (!Read(&ne, "a tensor dimension")) return false;
    if (ne == 0 || ne > uint64_t{1} << 40 || MulOverflows(numel, ne, &numel) || numel > uint64_t{1} << 48) {
      return Fail("tensor '" + t->name + "' has an invalid shape");
    }
    t->ne.push_back(static_cast<int64_t>(ne));
  }
  if (!Read(&t->type, "a tensor type") || !Read(offset, "a tensor offset")) return false;
  const TypeGeometry g = Geometry(t->type);
  if (g.block == 0) return Fail("tensor '" + t->name + "' has unknown type " + std::to_string(t->type));
  if (t->ne[0] % g.block != 0) {
    return Fail("tensor '" + t->name + "': " + std::to_string(t->ne[0]) + " columns is not a multiple of " +
                GgmlTypeName(t->type) + "'s block of " + std::to_string(g.block));
  }
  uint64_t bytes = 0;
  if (MulOverflows(numel / g.block, g.bytes, &bytes)) return Fail("tensor '" + t->name + "' is too large");
  t->nbytes = bytes;
  return true;
}

Status GgufParser::PlaceTensors(GgufFile* f, const std::vector<uint64_t>& offsets) {
  int64_t align = 32;
  if (const GgufValue* a = f->Find("general.alignment")) {
    if (!a->is_integer() || a->i <= 0 || a->i > static_cast<int64_t>(kMaxAlignment) ||
        (a->i & (a->i - 1)) != 0) {
      return InvalidArgumentError("general.alignment must be a power of two up to 65536");
    }
    align = a->i;
  }
  const uint64_t data_start = (pos_ + align - 1) / align * align;
  if (data_start > n_) return InvalidArgumentError("the data section starts past the end of the file");
  const uint64_t data_size = n_ - data_start;
  std::vector<std::pair<uint64_t, size_t>> order;
  for (size_t i = 0; i < f->tensors_.size(); ++i) {
    GgufTensor& t = f->tensors_[i];
    const uint64_t off = offsets[i];
    if (off % align != 0) return InvalidArgumentError("tensor '" + t.name + "' is not aligned");
    if (off > data_size || t.nbytes > data_size - off) {
      return InvalidArgumentError("tensor '" + t.name + "' lies outside the file (truncated?)");
    }
    t.data = p_ + data_start + off;
    order.emplace_back(off, i);
  }
  std::sort(order.begin(), order.end());
  for (size_t k = 1; k < order.size(); ++k) {
    const GgufTensor& prev = f->tensors_[order[k - 1].second];
    if (order[k - 1].first + prev.nbytes > order[k].first) {
      return InvalidArgumentError("tensors '" + prev.name + "' and '" + f->tensors_[order[k].second].name +
                                  "' overlap");
    }
  }
  return Status::Ok();
}

Status GgufParser::Parse(GgufFile* f) {
  uint32_t magic = 0;
  uint64_t n_tensors = 0, n_kv = 0;
  if (!Read(&magic, "the magic") || std::memcmp(&magic, "GGUF", 4) != 0)
    return InvalidArgumentError("not a GGUF file");
  if (!Read(&f->version_, "the version")) return InvalidArgumentError(err_);
  if (f->version_ != 2 && f->version_ != 3) {
    return InvalidArgumentError("GGUF version " + std::to_string(f->version_) + " is not supported (2 or 3)");
  }
  if (!Read(&n_tensors, "the tensor count") || !Read(&n_kv, "the key count"))
    return InvalidArgumentError(err_);
  // Each key/value takes at least 8 + 1 + 4 + 1 bytes, each tensor info at least 8 + 1 + 4 + 8 + 4 + 8.
  if (n_kv > left() / 14 || n_tensors > left() / 33)
    return InvalidArgumentError("key or tensor count exceeds the file");
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string_view key;
    if (!ReadString(&key, "a key")) return InvalidArgumentError(err_);
    GgufValue v;
    if (!ReadValue(&v, std::string(key))) return InvalidArgumentError(err_);
    if (!f->kv_.emplace(std::string(key), std::move(v)).second) {
      return InvalidArgumentError("duplicate key '" + std::string(key) + "'");
    }
  }
  std::vector<uint64_t> offsets(n_tensors);
  f->tensors_.resize(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    if (!ReadTensorInfo(&f->tensors_[i], &offsets[i])) return InvalidArgumentError(err_);
    if (!f->index_.emplace(f->tensors_[i].name, i).second) {
      return InvalidArgumentError("duplicate tensor '" + f->tensors_[i].name + "'");
    }
  }
  return PlaceTensors(f, offsets);
}

StatusOr<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path) {
  MINERU_ASSIGN_OR_RETURN(auto mapped, MappedFile::Open(path));
  std::unique_ptr<GgufFile> f(new GgufFile());
  GgufParser parser(mapped->data(), mapped->size());
  f->file_ = std::move(mapped);
  Status s = parser.Parse(f.get());
  if (!s.ok()) return InvalidArgumentError(path + ": malformed GGUF: " + s.message());
  return f;
}

const GgufTensor* GgufFile::FindTensor(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

const GgufValue* GgufFile::Find(std::string_view key) const {
  auto it = kv_.find(key);
  return it == kv_.end() ? nullptr : &it->second;
}

StatusOr<int64_t> GgufFile::GetInt(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (!v) return NotFoundError(path() + ": no key '" + std::string(key) + "'");
  if (!v->is_integer())
    return InvalidArgumentError(path() + ": key '" + std::string(key) + "' is not an integer");
  return v->i;
}

StatusOr<double> GgufFile::GetFloat(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (!v) return NotFoundError(path() + ": no key '" + std::string(key) + "'");
  if (v->is_float()) return v->f;
  if (v->is_integer()) return static_cast<double>(v->i);
  return InvalidArgumentError(path() + ": key '" + std::string(key) + "' is not a number");
}

StatusOr<std::string> GgufFile::GetString(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (!v) return NotFoundError(path() + ": no key '" + std::string(key) + "'");
  if (v->type != GgufValueType::kString)
    return InvalidArgumentError(path() + ": key '" + std::string(key) + "' is not a string");
  return std::string(v->str);
}

StatusOr<bool> GgufFile::GetBool(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (!v) return NotFoundError(path() + ": no key '" + std::string(key) + "'");
  if (v->type != GgufValueType::kBool)
    return InvalidArgumentError(path() + ": key '" + std::string(key) + "' is not a bool");
  return v->i != 0;
}

StatusOr<int64_t> GgufFile::GetInt(std::string_view key, int64_t dflt) const {
  return Find(key) ? GetInt(key) : StatusOr<int64_t>(dflt);
}

StatusOr<double> GgufFile::GetFloat(std::string_view key, double dflt) const {
  return Find(key) ? GetFloat(key) : StatusOr<double>(dflt);
}

StatusOr<std::string> GgufFile::GetString(std::string_view key, const std::string& dflt) const {
  return Find(key) ? GetString(key) : StatusOr<std::string>(dflt);
}

bool LooksLikeGguf(const std::string& path) {
  FILE* fp = std::fopen(path.c_str(), "rb");
  if (!fp) return false;
  char magic[4] = {};
  const bool ok = std::fread(magic, 1, 4, fp) == 4 && std::memcmp(magic, "GGUF", 4) == 0;
  std::fclose(fp);
  return ok;
}

bool GgufHasNoVocabulary(const GgufFile& f) {
  const GgufValue* v = f.Find("tokenizer.ggml.model");
  return v && v->type == GgufValueType::kString && (v->str == "none" || v->str == "no_vocab");
}

}  // namespace mineru
