#include "base/gguf_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace mineru {
namespace {

constexpr uint64_t kAlign = 32;

template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(T));
}

void PutString(std::string* out, const std::string& s) {
  Put<uint64_t>(out, s.size());
  out->append(s);
}

uint64_t Padded(uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

}  // namespace

void GgufWriter::Key(const std::string& key, GgufValueType t) {
  PutString(&kv_, key);
  Put<uint32_t>(&kv_, static_cast<uint32_t>(t));
  ++n_kv_;
}

void GgufWriter::AddString(const std::string& key, const std::string& v) {
  Key(key, GgufValueType::kString);
  PutString(&kv_, v);
}
void GgufWriter::AddU32(const std::string& key, uint32_t v) {
  Key(key, GgufValueType::kU32);
  Put(&kv_, v);
}
void GgufWriter::AddI32(const std::string& key, int32_t v) {
  Key(key, GgufValueType::kI32);
  Put(&kv_, v);
}
void GgufWriter::AddF32(const std::string& key, float v) {
  Key(key, GgufValueType::kF32);
  Put(&kv_, v);
}
void GgufWriter::AddBool(const std::string& key, bool v) {
  Key(key, GgufValueType::kBool);
  Put<uint8_t>(&kv_, v ? 1 : 0);
}
void GgufWriter::AddI32Array(const std::string& key, const std::vector<int32_t>& v) {
  Key(key, GgufValueType::kArray);
  Put<uint32_t>(&kv_, static_cast<uint32_t>(GgufValueType::kI32));
  Put<uint64_t>(&kv_, v.size());
  for (int32_t x : v) Put(&kv_, x);
}
void GgufWriter::AddF32Array(const std::string& key, const std::vector<float>& v) {
  Key(key, GgufValueType::kArray);
  Put<uint32_t>(&kv_, static_cast<uint32_t>(GgufValueType::kF32));
  Put<uint64_t>(&kv_, v.size());
  for (float x : v) Put(&kv_, x);
}
void GgufWriter::AddStringArray(const std::string& key, const std::vector<std::string>& v) {
  Key(key, GgufValueType::kArray);
  Put<uint32_t>(&kv_, static_cast<uint32_t>(GgufValueType::kString));
  Put<uint64_t>(&kv_, v.size());
  for (const std::string& s : v) PutString(&kv_, s);
}

void GgufWriter::AddTensor(const std::string& name, GgmlType type, std::vector<int64_t> ne, const void* data,
                           size_t nbytes) {
  tensors_.push_back(Tensor{name, type, std::move(ne), data, nbytes, {}});
}

void GgufWriter::AddOwnedTensor(const std::string& name, GgmlType type, std::vector<int64_t> ne,
                                std::string bytes) {
  const size_t n = bytes.size();
  tensors_.push_back(Tensor{name, type, std::move(ne), nullptr, n, std::move(bytes)});
}

Status GgufWriter::Write(const std::string& path) const {
  std::string head = "GGUF";
  Put<uint32_t>(&head, 3);
  Put<uint64_t>(&head, tensors_.size());
  Put<uint64_t>(&head, n_kv_);
  head += kv_;
  uint64_t off = 0;
  for (const Tensor& t : tensors_) {
    PutString(&head, t.name);
    Put<uint32_t>(&head, static_cast<uint32_t>(t.ne.size()));
    for (int64_t d : t.ne) Put<uint64_t>(&head, static_cast<uint64_t>(d));
    Put<uint32_t>(&head, static_cast<uint32_t>(t.type));
    Put<uint64_t>(&head, off);
    off += Padded(t.nbytes);
  }
  head.resize(Padded(head.size()), '\0');
  FILE* fp = std::fopen(path.c_str(), "wb");
  if (!fp) return IoError("cannot create " + path + ": " + std::strerror(errno));
  bool ok = std::fwrite(head.data(), 1, head.size(), fp) == head.size();
  static const char kZeros[kAlign] = {};
  for (const Tensor& t : tensors_) {
    if (!ok) break;
    const void* p = t.owned.empty() ? t.data : t.owned.data();
    ok = std::fwrite(p, 1, t.nbytes, fp) == t.nbytes;
    const size_t pad = Padded(t.nbytes) - t.nbytes;
    ok = ok && std::fwrite(kZeros, 1, pad, fp) == pad;
  }
  const int saved = errno;
  ok = (std::fclose(fp) == 0) && ok;
  if (!ok) {
    std::remove(path.c_str());
    return IoError("cannot write " + path + ": " + std::strerror(saved ? saved : errno));
  }
  return Status::Ok();
}

}  // namespace mineru
