#include "base/safetensors.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "base/bf16.h"
#include "base/json_parse.h"

namespace mineru {
namespace {

constexpr uint64_t kMaxHeaderBytes = 100u << 20;  // the format's own limit is 100 MB

bool ParseDType(const std::string& s, DType* out) {
  static const std::pair<const char*, DType> kNames[] = {
      {"F32", DType::kF32}, {"F16", DType::kF16},  {"BF16", DType::kBF16}, {"F64", DType::kF64},
      {"I64", DType::kI64}, {"I32", DType::kI32},  {"I16", DType::kI16},   {"I8", DType::kI8},
      {"U8", DType::kU8},   {"BOOL", DType::kBool}};
  for (const auto& [name, t] : kNames) {
    if (s == name) {
      *out = t;
      return true;
    }
  }
  return false;
}

// The JSON header of a mapped safetensors file (8-byte little-endian length, then the JSON);
// *header_len gets its length.
StatusOr<nlohmann::json> ReadHeader(const MappedFile& file, const std::string& path, uint64_t* header_len) {
  const size_t size = file.size();
  if (size < 8) return DataLossError(path + ": too short for a safetensors file");
  std::memcpy(header_len, file.data(), 8);  // little-endian hosts only (x86, ARM)
  if (*header_len > kMaxHeaderBytes) {
    return DataLossError(path + ": header length " + std::to_string(*header_len) +
                         " exceeds the format's limit");
  }
  if (*header_len > size - 8) {
    return DataLossError(path + ": truncated: the header alone needs " + std::to_string(8 + *header_len) +
                         " bytes, the file has " + std::to_string(size));
  }
  const char* hdr = reinterpret_cast<const char*>(file.data() + 8);
  nlohmann::json j;
  if (!ParseJson(std::string_view(hdr, *header_len), {}, &j).ok() || !j.is_object())
    return DataLossError(path + ": header is not a JSON object");
  return j;
}

// One header entry checked against the file: a known dtype, a sane shape, and a byte range
// [begin, end) of the data section (which starts at byte 8 + header_len of a `size`-byte file)
// that matches the shape. t.data points into the data section at `base`.
struct TensorEntry {
  TensorInfo t;
  uint64_t begin = 0, end = 0;
};

StatusOr<TensorEntry> ParseTensorEntry(const std::string& path, const std::string& name,
                                       const nlohmann::json& v, const uint8_t* base, uint64_t header_len,
                                       uint64_t size) {
  const uint64_t data_size = size - 8 - header_len;
  const std::string where = path + ": tensor '" + name + "'";
  if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets")) {
    return DataLossError(where + " lacks dtype/shape/data_offsets");
  }
  TensorEntry te;
  TensorInfo& t = te.t;
  t.name = name;
  if (!v["dtype"].is_string() || !ParseDType(v["dtype"].get<std::string>(), &t.dtype)) {
    return DataLossError(where + " has an unknown dtype");
  }
  const auto& shape = v["shape"];
  const auto& offs = v["data_offsets"];
  if (!shape.is_array() || shape.size() > 8 || !offs.is_array() || offs.size() != 2) {
    return DataLossError(where + " has a malformed shape or data_offsets");
  }
  uint64_t numel = 1;
  for (const auto& d : shape) {
    if (!d.is_number_unsigned()) return DataLossError(where + " has a negative or non-integer dimension");
    uint64_t dim = d.get<uint64_t>();
    if (dim != 0 && numel > std::numeric_limits<uint64_t>::max() / 16 / dim) {
      return DataLossError(where + " has an absurd shape");
    }
    numel *= dim;
    t.shape.push_back(static_cast<int64_t>(dim));
  }
  if (!offs[0].is_number_unsigned() || !offs[1].is_number_unsigned()) {
    return DataLossError(where + " has non-integer data_offsets");
  }
  const uint64_t b = offs[0].get<uint64_t>(), e = offs[1].get<uint64_t>();
  if (b > e) return DataLossError(where + " has data_offsets in the wrong order");
  if (e > data_size) {
    return DataLossError(path + ": truncated: tensor '" + name + "' ends at byte " +
                         std::to_string(8 + header_len + e) + ", the file has " + std::to_string(size));
  }
  if (e - b != numel * DTypeSize(t.dtype)) {
    return DataLossError(where + " byte range does not match its shape " + t.ShapeString());
  }
  t.data = base + b;
  t.nbytes = static_cast<size_t>(e - b);
  te.begin = b;
  te.end = e;
  return te;
}

}  // namespace

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string TensorInfo::ShapeString() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  MINERU_ASSIGN_OR_RETURN(auto file, MappedFile::Open(path));
  uint64_t header_len = 0;
  MINERU_ASSIGN_OR_RETURN(nlohmann::json j, ReadHeader(*file, path, &header_len));

  std::unique_ptr<SafetensorsFile> st(new SafetensorsFile());
  const uint8_t* base = file->data() + 8 + header_len;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& name = it.key();
    const auto& v = it.value();
    if (name == "__metadata__") {
      if (v.is_object()) {
        for (auto m = v.begin(); m != v.end(); ++m) {
          if (m.value().is_string()) st->metadata_[m.key()] = m.value().get<std::string>();
        }
      }
      continue;
    }
    MINERU_ASSIGN_OR_RETURN(TensorEntry te, ParseTensorEntry(path, name, v, base, header_len, file->size()));
    if (te.end > te.begin) ranges.emplace_back(te.begin, te.end);
    st->index_[name] = st->tensors_.size();
    st->tensors_.push_back(std::move(te.t));
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first < ranges[i - 1].second) return DataLossError(path + ": tensor byte ranges overlap");
  }
  st->file_ = std::move(file);
  return st;
}

const TensorInfo* SafetensorsFile::Find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

StatusOr<std::vector<float>> ReadAsF32(const TensorInfo& t) {
  const size_t n = static_cast<size_t>(t.numel());
  std::vector<float> out(n);
  const uint8_t* p = t.data;
  for (size_t i = 0; i < n; ++i) {
    switch (t.dtype) {
      case DType::kF32: {
        float f;
        std::memcpy(&f, p + 4 * i, 4);
        out[i] = f;
        break;
      }
      case DType::kF64: {
        double d;
        std::memcpy(&d, p + 8 * i, 8);
        out[i] = static_cast<float>(d);
        break;
      }
      case DType::kBF16: {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        out[i] = Bf16ToF32(h);
        break;
      }
      case DType::kF16: {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        out[i] = F16ToF32(h);
        break;
      }
      case DType::kI64: {
        int64_t v;
        std::memcpy(&v, p + 8 * i, 8);
        out[i] = static_cast<float>(v);
        break;
      }
      case DType::kI32: {
        int32_t v;
        std::memcpy(&v, p + 4 * i, 4);
        out[i] = static_cast<float>(v);
        break;
      }
      default:
        return InvalidArgumentError("tensor '" + t.name + "' has dtype " + DTypeName(t.dtype) +
                                    ", not convertible to f32");
    }
  }
  return out;
}

StatusOr<std::vector<int64_t>> ReadAsI64(const TensorInfo& t) {
  const size_t n = static_cast<size_t>(t.numel());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    switch (t.dtype) {
      case DType::kI64:
        std::memcpy(&out[i], t.data + 8 * i, 8);
        break;
      case DType::kI32: {
        int32_t v;
        std::memcpy(&v, t.data + 4 * i, 4);
        out[i] = v;
        break;
      }
      case DType::kU8:
        out[i] = t.data[i];
        break;
      case DType::kI8:
        out[i] = static_cast<int8_t>(t.data[i]);
        break;
      default:
        return InvalidArgumentError("tensor '" + t.name + "' is not an integer tensor");
    }
  }
  return out;
}

Status WriteSafetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                        const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    header[t.name] = {{"dtype", DTypeName(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string h = header.dump();
  while ((8 + h.size()) % 8 != 0) h += ' ';  // align the data section to 8 bytes
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return IoError("cannot write " + path);
  uint64_t n = h.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out.write(h.data(), static_cast<std::streamsize>(h.size()));
  for (const auto& t : tensors) out.write(t.bytes.data(), static_cast<std::streamsize>(t.bytes.size()));
  if (!out) return IoError("write failed: " + path);
  return Status::Ok();
}

}  // namespace mineru
