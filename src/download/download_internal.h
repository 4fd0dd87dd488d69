// download/download_internal.h — what the pieces of the model download share, internal to
// mineru_download (its interface is download.h): the file names of a MinerU checkpoint, two string
// helpers, and the local side of a download. Who defines what:
//   download.cc     the download job: listing a repository's files, fetching, resuming, verifying
//   hub.cc          hub, repo, revision and endpoint names, URLs, which files a model needs
//   local_files.cc  the model directory on disk: sizes, hashes, an index's shards, the .part file
//                   of a transfer, the directory lock
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/hash.h"
#include "base/status.h"

namespace mineru {
namespace download_internal {

constexpr const char* kIndexName = "model.safetensors.index.json";
constexpr const char* kSingleName = "model.safetensors";
// Small files the engine reads, in download order. The first three are required.
constexpr const char* kSmallFiles[] = {"config.json",           "preprocessor_config.json",
                                       "tokenizer.json",        "generation_config.json",
                                       "tokenizer_config.json", "chat_template.json"};
constexpr int kRequiredSmall = 3;

// String helpers (hub.cc): s in lower-case ASCII; whether s ends with tail.
std::string Lower(std::string s);
bool EndsWith(const std::string& s, const std::string& tail);

// The size of the regular file at path; nullopt when there is none (local_files.cc).
std::optional<uint64_t> FileSize(const std::string& path);
// The SHA-256 of the file at path, lower-case hex.
StatusOr<std::string> HashFile(const std::string& path);
// Shard file names listed by an index's weight_map, sorted and unique.
StatusOr<std::vector<std::string>> ShardsOfIndex(const std::string& index_path);

// The .part file of one download: an fd positioned at its end and the SHA-256 of its contents.
class PartFile {
 public:
  ~PartFile() { Close(); }
  Status Open(const std::string& path);
  Status Truncate();
  bool Append(const char* p, size_t n);
  Status Sync();
  void Close();
  void Remove();
  std::string Digest() { return hash_.HexDigest(); }
  uint64_t size() const { return size_; }
  int write_errno() const { return write_errno_; }

 private:
  std::string path_;
  int fd_ = -1;
  Sha256 hash_;
  uint64_t size_ = 0;
  int write_errno_ = 0;
};

// flock on the model directory, so two downloads never write the same .part.
class DirLock {
 public:
  ~DirLock();
  Status Acquire(const std::string& dir);

 private:
  int fd_ = -1;
};

}  // namespace download_internal
}  // namespace mineru
