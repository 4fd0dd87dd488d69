// download/local_files.cc — the local side of a model download: file sizes and SHA-256 digests,
// the shard list of a safetensors index (plain file names only), the .part file a transfer
// appends to (hashed as it grows, so a resumed file needs no second pass), and the lock that keeps
// two downloads out of one model directory. Nothing here speaks HTTP (download.cc does).
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/hash.h"
#include "base/json_parse.h"
#include "base/mapped_file.h"
#include "download/download_internal.h"

namespace mineru {
namespace download_internal {
namespace {

// A shard name from an index: a plain file name in the repo root ending in .safetensors.
bool IsSafeShardName(const std::string& name) {
  if (name.empty() || name.size() > 255 || name[0] == '.') return false;
  if (name.find('/') != std::string::npos || name.find('\\') != std::string::npos) return false;
  if (name.find('\0') != std::string::npos) return false;
  const std::string suffix = ".safetensors";
  return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::optional<uint64_t> FileSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return static_cast<uint64_t>(st.st_size);
}

namespace {

// Adds an fd's whole contents (from offset 0) to *h; leaves the offset at the end.
bool HashFd(int fd, Sha256* h, uint64_t* bytes) {
  std::vector<char> buf(1 << 20);
  *bytes = 0;
  if (::lseek(fd, 0, SEEK_SET) < 0) return false;
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) return true;
    h->Update(buf.data(), static_cast<size_t>(n));
    *bytes += static_cast<uint64_t>(n);
  }
}

}  // namespace

StatusOr<std::string> HashFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError("cannot open " + path + ": " + std::strerror(errno));
  Sha256 h;
  uint64_t n = 0;
  const bool ok = HashFd(fd, &h, &n);
  const int err = errno;
  ::close(fd);
  if (!ok) return IoError("cannot read " + path + ": " + std::strerror(err));
  return h.HexDigest();
}

// Shard file names listed by an index's weight_map, sorted and unique.
StatusOr<std::vector<std::string>> ShardsOfIndex(const std::string& index_path) {
  MINERU_ASSIGN_OR_RETURN(std::string text, ReadFileToString(index_path, size_t(64) << 20));
  nlohmann::json j;
  if (!ParseJson(text, {}, &j).ok() || !j.is_object() || !j.contains("weight_map") ||
      !j["weight_map"].is_object()) {
    return DataLossError(index_path + " has no weight_map object");
  }
  std::set<std::string> names;
  for (const auto& kv : j["weight_map"].items()) {
    if (!kv.value().is_string()) return DataLossError(index_path + ": weight_map value is not a file name");
    const std::string name = kv.value().get<std::string>();
    if (!IsSafeShardName(name)) return DataLossError(index_path + ": unacceptable shard name '" + name + "'");
    names.insert(name);
  }
  if (names.empty()) return DataLossError(index_path + ": empty weight_map");
  return std::vector<std::string>(names.begin(), names.end());
}

Status PartFile::Open(const std::string& path) {
  path_ = path;
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) return IoError("cannot open " + path + ": " + std::strerror(errno));
  uint64_t n = 0;
  if (!HashFd(fd_, &hash_, &n)) return IoError("cannot read " + path + ": " + std::strerror(errno));
  size_ = n;
  return Status::Ok();
}

Status PartFile::Truncate() {
  if (::ftruncate(fd_, 0) != 0 || ::lseek(fd_, 0, SEEK_SET) < 0) {
    return IoError("cannot truncate " + path_ + ": " + std::strerror(errno));
  }
  hash_ = Sha256();
  size_ = 0;
  return Status::Ok();
}

bool PartFile::Append(const char* p, size_t n) {
  hash_.Update(p, n);
  size_ += n;
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      write_errno_ = errno;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

Status PartFile::Sync() {
  if (::fsync(fd_) != 0) return IoError("cannot sync " + path_ + ": " + std::strerror(errno));
  return Status::Ok();
}

void PartFile::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void PartFile::Remove() {
  Close();
  ::unlink(path_.c_str());
}

DirLock::~DirLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

Status DirLock::Acquire(const std::string& dir) {
  fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) return IoError("cannot open " + dir + ": " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return Status(StatusCode::kUnavailable,
                    "another download is writing into " + dir + "; wait for it to finish");
    }
    return IoError("cannot lock " + dir + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace download_internal
}  // namespace mineru
